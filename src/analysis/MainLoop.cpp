#include "analysis/MainLoop.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

namespace alcop {

namespace {

/** One PTX instruction: its guard, opcode and operands as written. */
struct Instruction {
    bool predicated = false;
    std::string opcode;
    std::vector<std::string> operands;
};

struct Block {
    std::vector<Instruction> body;
    std::vector<int> successors;
};

struct Kernel {
    std::string name;
    std::vector<Block> blocks;
};

std::string trim(const std::string &s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

/** Operands split at the commas outside brackets and braces. */
std::vector<std::string> split_operands(const std::string &s) {
    std::vector<std::string> ops;
    std::string cur;
    int depth = 0;
    for (char c : s) {
        if (c == '[' || c == '{') depth++;
        if (c == ']' || c == '}') depth--;
        if (c == ',' && depth == 0) {
            ops.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!trim(cur).empty()) ops.push_back(trim(cur));
    return ops;
}

Instruction parse_instruction(std::string text) {
    Instruction i;
    text = trim(text);
    if (!text.empty() && text[0] == '@') {
        i.predicated = true;
        const size_t sp = text.find_first_of(" \t");
        text = sp == std::string::npos ? "" : trim(text.substr(sp));
    }
    const size_t sp = text.find_first_of(" \t");
    i.opcode = text.substr(0, sp);
    if (sp != std::string::npos) i.operands = split_operands(text.substr(sp));
    return i;
}

/** The statements of a kernel body: labels ("name:") and instructions; comments, scope
 * braces and directives (.reg, .local, .pragma, ...) dropped. */
std::vector<std::string> statements(const std::string &body) {
    std::vector<std::string> out;
    std::string cur;
    int depth = 0;  // braces inside an instruction (vector operands)
    for (size_t p = 0; p < body.size(); p++) {
        const char c = body[p];
        if (c == '/' && p + 1 < body.size() && body[p + 1] == '/') {
            p = body.find('\n', p);
            if (p == std::string::npos) break;
            continue;
        }
        if (c == '/' && p + 1 < body.size() && body[p + 1] == '*') {
            p = body.find("*/", p);
            if (p == std::string::npos) break;
            p++;
            continue;
        }
        const std::string t = trim(cur);
        if (c == '\n' && t.rfind(".loc", 0) == 0) {  // debug line directives end with the line
            cur.clear();
            continue;
        }
        if (t.empty() && (c == '{' || c == '}')) continue;  // a scope of its own
        if (c == '{') depth++;
        if (c == '}') depth--;
        if (c == ':' && depth == 0 && !t.empty() && t.find_first_of(" \t") == std::string::npos &&
            (p + 1 >= body.size() || body[p + 1] != ':') && (p == 0 || body[p - 1] != ':')) {
            out.push_back(t + ":");
            cur.clear();
            continue;
        }
        if (c == ';' && depth == 0) {
            if (!t.empty() && t[0] != '.') out.push_back(t);
            cur.clear();
            continue;
        }
        cur += c;
    }
    return out;
}

/** The kernels of a module, each split into basic blocks with their successors. */
std::vector<Kernel> kernels_of(const std::string &ptx) {
    std::vector<Kernel> kernels;
    size_t pos = 0;
    while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
        Kernel k;
        size_t name_begin = pos + 7, name_end = ptx.find_first_of("( \t\n", name_begin);
        k.name = ptx.substr(name_begin, name_end - name_begin);
        // The body: from the first '{' after the parameter list to its matching '}'.
        size_t open = ptx.find(')', name_end);
        open = ptx.find('{', open);
        if (open == std::string::npos) break;
        int depth = 0;
        size_t close = open;
        for (; close < ptx.size(); close++) {
            if (ptx[close] == '{') depth++;
            if (ptx[close] == '}' && --depth == 0) break;
        }
        pos = close;
        std::map<std::string, int> label_block;
        std::vector<std::pair<int, std::string>> branches;  // block, target label
        std::vector<bool> falls_through;
        k.blocks.emplace_back();
        falls_through.push_back(true);
        bool ended = false;  // the current block ended with a branch or return
        for (const std::string &s : statements(ptx.substr(open + 1, close - open - 1))) {
            if (s.back() == ':') {
                if (!k.blocks.back().body.empty() || ended) {
                    k.blocks.emplace_back();
                    falls_through.push_back(true);
                }
                label_block[s.substr(0, s.size() - 1)] = (int)k.blocks.size() - 1;
                ended = false;
                continue;
            }
            if (ended) {
                k.blocks.emplace_back();
                falls_through.push_back(true);
                ended = false;
            }
            Instruction i = parse_instruction(s);
            const int b = (int)k.blocks.size() - 1;
            const bool branch = i.opcode.rfind("bra", 0) == 0;
            const bool exits = i.opcode == "ret" || i.opcode == "exit" || i.opcode == "trap";
            if (branch && !i.operands.empty()) branches.emplace_back(b, i.operands.back());
            if ((branch || exits) && !i.predicated) falls_through[b] = false;
            ended = branch || exits;
            k.blocks[b].body.push_back(std::move(i));
        }
        for (size_t b = 0; b < k.blocks.size(); b++) {
            if (falls_through[b] && b + 1 < k.blocks.size()) k.blocks[b].successors.push_back((int)b + 1);
        }
        for (const auto &[b, label] : branches) {
            auto it = label_block.find(label);
            if (it != label_block.end()) k.blocks[b].successors.push_back(it->second);
        }
        kernels.push_back(std::move(k));
    }
    return kernels;
}

/** The strongly connected components that are loops (more than one block, or a block that
 * branches to itself), each as its blocks in textual order. Tarjan's algorithm. */
std::vector<std::vector<int>> loops_of(const std::vector<Block> &blocks) {
    const int n = (int)blocks.size();
    std::vector<int> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::vector<int>> loops;
    int next = 0;
    std::function<void(int)> connect = [&](int v) {
        index[v] = low[v] = next++;
        stack.push_back(v);
        on_stack[v] = true;
        for (int w : blocks[v].successors) {
            if (index[w] < 0) {
                connect(w);
                low[v] = std::min(low[v], low[w]);
            } else if (on_stack[w]) {
                low[v] = std::min(low[v], index[w]);
            }
        }
        if (low[v] != index[v]) return;
        std::vector<int> scc;
        int w;
        do {
            w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            scc.push_back(w);
        } while (w != v);
        const auto &succ = blocks[v].successors;
        if (scc.size() > 1 || std::find(succ.begin(), succ.end(), v) != succ.end()) {
            std::sort(scc.begin(), scc.end());
            loops.push_back(scc);
        }
    };
    for (int v = 0; v < n; v++) {
        if (index[v] < 0) connect(v);
    }
    return loops;
}

bool starts_with(const std::string &s, const char *prefix) {
    return s.rfind(prefix, 0) == 0;
}

bool is_mma(const Instruction &i) {
    return starts_with(i.opcode, "mma.sync") || starts_with(i.opcode, "wmma.mma");
}

bool is_fp32_fma(const Instruction &i) {
    return starts_with(i.opcode, "fma.") && i.opcode.size() > 4 && i.opcode.compare(i.opcode.size() - 4, 4, ".f32") == 0;
}

/** The register class of an operand ("r", "rd", "f", ...), or "" for anything but a register. */
std::string register_class(const std::string &op) {
    if (op.size() < 2 || op[0] != '%') return "";
    size_t e = 1;
    while (e < op.size() && std::isalpha((unsigned char)op[e])) e++;
    if (e == op.size() || !std::all_of(op.begin() + e, op.end(), [](char c) { return std::isdigit((unsigned char)c); }))
        return "";
    return op.substr(1, e - 1);
}

bool is_retyping_move(const Instruction &i) {
    if (i.opcode != "mov.b16" && i.opcode != "mov.b32" && i.opcode != "mov.b64") return false;
    if (i.operands.size() != 2) return false;
    const std::string a = register_class(i.operands[0]), b = register_class(i.operands[1]);
    return !a.empty() && !b.empty() && a != b;
}

MainLoopReport count(const std::string &name, const std::vector<Block> &blocks, const std::vector<int> &loop,
                     bool tensor_cores) {
    MainLoopReport r;
    r.kernel = name;
    r.found = true;
    r.tensor_cores = tensor_cores;
    r.blocks = (int)loop.size();
    std::map<std::string, int> other;
    std::vector<bool> is_work;
    for (int b : loop) {
        for (const Instruction &i : blocks[b].body) {
            const std::string &op = i.opcode;
            r.instructions++;
            const bool work = tensor_cores ? is_mma(i) : is_fp32_fma(i);
            // A retyping move issues nothing, so it takes no place in a stretch either.
            if (!is_retyping_move(i)) is_work.push_back(work);
            if (work) {
                r.work++;
            } else if (starts_with(op, "ldmatrix")) {
                r.ldmatrix++;
            } else if (starts_with(op, "cp.async.commit_group")) {
                r.commits++;
            } else if (starts_with(op, "cp.async.wait")) {
                r.waits++;
            } else if (starts_with(op, "cp.async.")) {
                int bytes = 0;
                if (i.operands.size() >= 3) bytes = std::atoi(i.operands[2].c_str());
                r.cp_async[bytes]++;
            } else if (starts_with(op, "ld.shared") || starts_with(op, "ld.volatile.shared")) {
                r.shared_loads++;
            } else if (starts_with(op, "st.shared") || starts_with(op, "st.volatile.shared")) {
                r.shared_stores++;
            } else if (starts_with(op, "ld.global")) {
                r.global_loads++;
            } else if (starts_with(op, "bar.") || starts_with(op, "barrier.")) {
                r.barriers++;
            } else if (is_retyping_move(i)) {
                r.retyping_moves++;
            } else {
                r.other++;
                other[op.substr(0, op.find('.'))]++;
                if (i.predicated && starts_with(op, "bra")) r.conditional_branches++;
            }
        }
    }
    // The longest run of issued non-work instructions, around the back edge too.
    const int n = (int)is_work.size();
    std::vector<int> at;
    for (int p = 0; p < n; p++) {
        if (is_work[p]) at.push_back(p);
    }
    if (at.empty()) {
        r.longest_stretch = n;
    } else {
        for (size_t w = 0; w < at.size(); w++) {
            const int next = w + 1 < at.size() ? at[w + 1] : at[0] + n;
            r.longest_stretch = std::max(r.longest_stretch, next - at[w] - 1);
        }
    }
    r.other_by_opcode.assign(other.begin(), other.end());
    std::stable_sort(r.other_by_opcode.begin(), r.other_by_opcode.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    return r;
}

}  // namespace

int MainLoopReport::cp_async_total() const {
    int n = 0;
    for (const auto &c : cp_async) n += c.second;
    return n;
}

std::vector<MainLoopReport> main_loops(const std::string &ptx) {
    std::vector<MainLoopReport> reports;
    for (const Kernel &k : kernels_of(ptx)) {
        // The loop holding the most mma.sync; where none does, the most fp32 fma.
        const std::vector<std::vector<int>> loops = loops_of(k.blocks);
        auto work_in = [&](const std::vector<int> &loop, bool tensor_cores) {
            int n = 0;
            for (int b : loop) {
                for (const Instruction &i : k.blocks[b].body) n += tensor_cores ? is_mma(i) : is_fp32_fma(i);
            }
            return n;
        };
        MainLoopReport r;
        r.kernel = k.name;
        for (bool tensor_cores : {true, false}) {
            const std::vector<int> *best = nullptr;
            int most = 0;
            for (const auto &loop : loops) {
                const int w = work_in(loop, tensor_cores);
                if (w > most) {
                    most = w;
                    best = &loop;
                }
            }
            if (best) {
                r = count(k.name, k.blocks, *best, tensor_cores);
                break;
            }
        }
        reports.push_back(r);
    }
    return reports;
}

std::string to_string(const MainLoopReport &r) {
    std::ostringstream os;
    os << "main loop of " << r.kernel << ": ";
    if (!r.found) {
        os << "no loop holds mma.sync or fp32 fma";
        return os.str();
    }
    const char *work = r.tensor_cores ? "mma.sync" : "fma.f32";
    os << r.work << " " << work;
    auto item = [&](int n, const char *what) {
        if (n) os << ", " << n << " " << what;
    };
    item(r.ldmatrix, "ldmatrix");
    for (const auto &[bytes, n] : r.cp_async) {
        os << ", " << n << " cp.async of " << bytes << " B";
    }
    item(r.shared_loads, "ld.shared");
    item(r.shared_stores, "st.shared");
    item(r.global_loads, "ld.global");
    item(r.barriers, "barrier");
    item(r.commits, "commit");
    item(r.waits, "wait");
    os << ", " << r.other << " other";
    for (size_t o = 0; o < r.other_by_opcode.size() && o < 6; o++) {
        os << (o ? ", " : " (") << r.other_by_opcode[o].first << " " << r.other_by_opcode[o].second;
    }
    os << (r.other_by_opcode.empty() ? "" : ")") << "; " << std::fixed << std::setprecision(2)
       << r.overhead_per_work() << " instructions per " << work << " beside it; " << r.blocks << " blocks, "
       << r.conditional_branches << " conditional branches, longest stretch " << r.longest_stretch << " without "
       << work;
    return os.str();
}

}  // namespace alcop
