#include "analysis/MainLoop.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <iomanip>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace alcop {

namespace {

/** One PTX instruction: its guard, opcode and operands as written. */
struct Instruction {
    bool predicated = false;
    std::string guard;  ///< as written: `@%p1`, `@!P0`, `@!PT`
    std::string opcode;
    std::vector<std::string> operands;
};

struct Block {
    std::vector<Instruction> body;
    std::vector<int> successors;
    int taken = -1;  ///< the block the branch that ends it jumps to, if one does
};

struct Kernel {
    std::string name;
    std::vector<Block> blocks;
};

bool starts_with(const std::string &s, const char *prefix) {
    return s.rfind(prefix, 0) == 0;
}

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
        i.guard = text.substr(0, sp);
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

/** The listing a loop is read from: PTX (its own names) or SASS (the machine code's). */
enum class Isa { Ptx, Sass };

/** The opcode's first word: `IMAD` of `IMAD.MOV.U32`, `add` of `add.s32`. */
std::string family(const std::string &opcode) {
    return opcode.substr(0, opcode.find('.'));
}

/** A jump to a target in the kernel: PTX's bra; SASS's BRA, JMP and CALL.REL.NOINC (ptxas's
 * exit from a loop: a call that does not return). */
bool is_branch(const Instruction &i, Isa isa) {
    if (isa == Isa::Ptx) return starts_with(i.opcode, "bra");
    return family(i.opcode) == "BRA" || family(i.opcode) == "JMP" || starts_with(i.opcode, "CALL.REL.NOINC");
}

/** Where a kernel's path ends: PTX's ret, exit and trap; SASS's EXIT, RET and BPT. */
bool ends_path(const Instruction &i, Isa isa) {
    if (isa == Isa::Ptx) return i.opcode == "ret" || i.opcode == "exit" || i.opcode == "trap";
    return starts_with(i.opcode, "EXIT") || starts_with(i.opcode, "RET") || starts_with(i.opcode, "BPT");
}

/** The label a branch names: its last operand, without SASS's quoting (`(.L_x_3)`). */
std::string branch_target(const Instruction &i) {
    std::string t = i.operands.empty() ? "" : i.operands.back();
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '`' || c == '(' || c == ')'; }), t.end());
    return t;
}

/** Kernel `name` split into basic blocks with their successors, from its statements: labels
 * ("name:") and instructions. A block starts at a label and after a branch or the end of a path;
 * a predicated branch also falls through. */
Kernel blocks_of(const std::string &name, const std::vector<std::string> &statements, Isa isa) {
    Kernel k;
    k.name = name;
    std::map<std::string, int> label_block;
    std::vector<std::pair<int, std::string>> branches;  // block, target label
    std::vector<bool> falls_through;
    k.blocks.emplace_back();
    falls_through.push_back(true);
    bool ended = false;  // the current block ended with a branch or the end of a path
    for (const std::string &s : statements) {
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
        const bool branch = is_branch(i, isa);
        const bool exits = ends_path(i, isa);
        if (branch && !i.operands.empty()) branches.emplace_back(b, branch_target(i));
        if ((branch || exits) && !i.predicated) falls_through[b] = false;
        ended = branch || exits;
        k.blocks[b].body.push_back(std::move(i));
    }
    for (size_t b = 0; b < k.blocks.size(); b++) {
        if (falls_through[b] && b + 1 < k.blocks.size()) k.blocks[b].successors.push_back((int)b + 1);
    }
    for (const auto &[b, label] : branches) {
        auto it = label_block.find(label);
        if (it == label_block.end()) continue;
        k.blocks[b].successors.push_back(it->second);
        k.blocks[b].taken = it->second;
    }
    return k;
}

/** The kernels of a module, each split into basic blocks with their successors. */
std::vector<Kernel> kernels_of(const std::string &ptx) {
    std::vector<Kernel> kernels;
    size_t pos = 0;
    while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
        size_t name_begin = pos + 7, name_end = ptx.find_first_of("( \t\n", name_begin);
        const std::string name = ptx.substr(name_begin, name_end - name_begin);
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
        kernels.push_back(blocks_of(name, statements(ptx.substr(open + 1, close - open - 1)), Isa::Ptx));
    }
    return kernels;
}

/** The kernels of a SASS listing (nvdisasm's, or cuobjdump -sass's), each split into basic
 * blocks with their successors (blocks_of()). An instruction's line is its address (hex, in a C
 * comment), a guard where it has one (`@P0`, `@!P0`), its opcode and operands, and `;`. A
 * branch names its target as a label (nvdisasm: `(.L_x_3)`, defined by a line `.L_x_3:`) or an
 * address (cuobjdump: `0x960`). A kernel starts at `.section .text.NAME` (nvdisasm) or
 * `Function : NAME` (cuobjdump). nvdisasm also labels what is no branch's target (BSSY's): only
 * the branches' targets start blocks. */
std::vector<Kernel> kernels_of_sass(const std::string &listing) {
    struct Line {
        std::vector<std::string> labels;  // the listing's, and the instruction's address
        std::string instruction;
    };
    std::vector<std::pair<std::string, std::vector<Line>>> raw;  // each kernel's instructions
    std::vector<std::string> pending;                            // labels before the next instruction
    const std::regex section(R"(^\s*\.section\s+\.text\.([^,\s]+))"), function(R"(^\s*Function\s*:\s*(\S+))"),
        label(R"(^\s*(\.L\w*):)"), instruction(R"(^\s*/\*([0-9a-fA-F]+)\*/\s+([^;]*);)");
    std::istringstream lines(listing);
    std::smatch m;
    for (std::string l; std::getline(lines, l);) {
        if (std::regex_search(l, m, section) || std::regex_search(l, m, function)) {
            raw.push_back({m[1], {}});
            pending.clear();
        } else if (raw.empty()) {
            continue;
        } else if (std::regex_search(l, m, label)) {
            pending.push_back(m[1]);
        } else if (std::regex_search(l, m, instruction)) {
            // The address as cuobjdump's branches name it: 0x, then hex digits without leading zeros.
            std::ostringstream address;
            address << "0x" << std::hex << std::stoll(m[1], nullptr, 16);
            pending.push_back(address.str());
            raw.back().second.push_back({pending, m[2]});
            pending.clear();
        }
    }
    std::vector<Kernel> kernels;
    for (const auto &[name, code] : raw) {
        std::set<std::string> targets;
        for (const Line &line : code) {
            const Instruction i = parse_instruction(line.instruction);
            if (is_branch(i, Isa::Sass)) targets.insert(branch_target(i));
        }
        std::vector<std::string> statements;
        for (const Line &line : code) {
            for (const std::string &l : line.labels) {
                if (targets.count(l)) statements.push_back(l + ":");
            }
            statements.push_back(line.instruction);
        }
        kernels.push_back(blocks_of(name, statements, Isa::Sass));
    }
    return kernels;
}

/** The strongly connected components of a graph (each node's successors) that are loops (more
 * than one node, or a node that is its own successor), each as its nodes in ascending order.
 * Tarjan's algorithm. */
std::vector<std::vector<int>> loops_of(const std::vector<std::vector<int>> &successors) {
    const int n = (int)successors.size();
    std::vector<int> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::vector<int>> loops;
    int next = 0;
    std::function<void(int)> connect = [&](int v) {
        index[v] = low[v] = next++;
        stack.push_back(v);
        on_stack[v] = true;
        for (int w : successors[v]) {
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
        const auto &succ = successors[v];
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

/** What an instruction does in a main loop: MainLoop.h's categories. */
enum class Role {
    Work,
    Ldmatrix,
    CpAsync,
    Commit,
    Wait,
    SharedLoad,
    SharedStore,
    GlobalLoad,
    Barrier,
    RetypingMove,
    Other
};

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

Role ptx_role(const Instruction &i, bool tensor_cores) {
    const std::string &op = i.opcode;
    const bool mma = starts_with(op, "mma.sync") || starts_with(op, "wmma.mma");
    const bool fp32_fma = starts_with(op, "fma.") && op.size() > 4 && op.compare(op.size() - 4, 4, ".f32") == 0;
    if (tensor_cores ? mma : fp32_fma) return Role::Work;
    if (starts_with(op, "ldmatrix")) return Role::Ldmatrix;
    if (starts_with(op, "cp.async.commit_group")) return Role::Commit;
    if (starts_with(op, "cp.async.wait")) return Role::Wait;
    if (starts_with(op, "cp.async.")) return Role::CpAsync;
    if (starts_with(op, "ld.shared") || starts_with(op, "ld.volatile.shared")) return Role::SharedLoad;
    if (starts_with(op, "st.shared") || starts_with(op, "st.volatile.shared")) return Role::SharedStore;
    if (starts_with(op, "ld.global")) return Role::GlobalLoad;
    if (starts_with(op, "bar.") || starts_with(op, "barrier.")) return Role::Barrier;
    if (is_retyping_move(i)) return Role::RetypingMove;
    return Role::Other;
}

/** Never executed: SASS's guard `@!PT` (not true) is false. ptxas places such instructions
 * (`@!PT LDS RZ, [RZ]` after asynchronous copies) for the hardware's sake; they take issue
 * slots and do nothing else. */
bool never_executed(const Instruction &i) {
    return i.guard == "@!PT";
}

/** SASS names the same roles: HMMA (mma.sync), FFMA, LDSM (ldmatrix), LDGSTS (cp.async),
 * LDGDEPBAR (its commit), DEPBAR (its wait), LDS / STS / LDG, BAR. Registers have no types in
 * SASS, so nothing retypes them; an instruction never executed is other. */
Role sass_role(const Instruction &i, bool tensor_cores) {
    if (never_executed(i)) return Role::Other;
    static const std::map<std::string, Role> roles = {
        {"LDSM", Role::Ldmatrix},  {"LDGSTS", Role::CpAsync},  {"LDGDEPBAR", Role::Commit}, {"DEPBAR", Role::Wait},
        {"LDS", Role::SharedLoad}, {"STS", Role::SharedStore}, {"LDG", Role::GlobalLoad},   {"BAR", Role::Barrier}};
    const std::string f = family(i.opcode);
    if (f == (tensor_cores ? "HMMA" : "FFMA")) return Role::Work;
    auto it = roles.find(f);
    return it == roles.end() ? Role::Other : it->second;
}

Role role_of(const Instruction &i, Isa isa, bool tensor_cores) {
    return isa == Isa::Ptx ? ptx_role(i, tensor_cores) : sass_role(i, tensor_cores);
}

/** The bytes an asynchronous copy moves: PTX's cp-size operand, SASS's size suffix in bits
 * (`LDGSTS.E.BYPASS.LTC128B.128`; none: 32). */
int copy_bytes(const Instruction &i, Isa isa) {
    if (isa == Isa::Ptx) return i.operands.size() >= 3 ? std::atoi(i.operands[2].c_str()) : 0;
    std::istringstream parts(i.opcode);
    for (std::string part; std::getline(parts, part, '.');) {
        if (part == "128" || part == "64") return std::stoi(part) / 8;
    }
    return 4;
}

/** An integer immediate as PTX writes it (decimal, 0x hex), or nothing. */
std::optional<int64_t> immediate(const std::string &s) {
    if (s.empty() || !(std::isdigit((unsigned char)s[0]) || s[0] == '-')) return std::nullopt;
    try {
        size_t used = 0;
        const int64_t v = std::stoll(s, &used, 0);
        if (used == s.size()) return v;
    } catch (const std::exception &) {}
    return std::nullopt;
}

/** `a CMP b` for setp's comparison and type (`setp.lt.u32`: "lt", "u32"); nothing for a
 * comparison it does not know. */
std::optional<bool> compare(const std::string &cmp, const std::string &type, int64_t a, int64_t b) {
    const bool is_unsigned =
        type[0] == 'u' || type[0] == 'b' || cmp == "lo" || cmp == "ls" || cmp == "hi" || cmp == "hs";
    const int bits = type.size() > 1 ? std::atoi(type.c_str() + 1) : 0;
    if (bits != 16 && bits != 32 && bits != 64) return std::nullopt;
    // The values as the type holds them: wrapped to its width, then signed or not.
    auto held = [&](int64_t v) -> long double {
        const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
        const uint64_t u = (uint64_t)v & mask;
        if (is_unsigned) return (long double)u;
        const bool negative = bits < 64 && (u >> (bits - 1)) & 1;
        return negative ? (long double)(int64_t)(u | ~mask) : (long double)(int64_t)u;
    };
    const long double x = held(a), y = held(b);
    if (cmp == "eq") return x == y;
    if (cmp == "ne") return x != y;
    if (cmp == "lt" || cmp == "lo") return x < y;
    if (cmp == "le" || cmp == "ls") return x <= y;
    if (cmp == "gt" || cmp == "hi") return x > y;
    if (cmp == "ge" || cmp == "hs") return x >= y;
    return std::nullopt;
}

/** The most runs a block of a main loop is counted with: an inner loop whose trips would take a
 * block past it counts once, which keeps the counts (and the stretch, which lists the runs) in
 * bounds for any PTX. */
constexpr int64_t max_runs = 1 << 16;

/** The block outside `loop` that enters it, where exactly one does, at one block of it; -1
 * otherwise. */
int preheader_of(const std::vector<int> &loop, const std::vector<std::vector<int>> &predecessors) {
    int preheader = -1, headers = 0;
    for (int b : loop) {
        std::vector<int> from;
        for (int p : predecessors[b]) {
            if (!std::binary_search(loop.begin(), loop.end(), p)) from.push_back(p);
        }
        if (from.empty()) continue;
        headers++;
        preheader = from.size() == 1 ? from[0] : -1;
    }
    return headers == 1 ? preheader : -1;
}

/** The trips an inner loop of a PTX main loop makes each time it is entered, where LLVM's
 * NVPTX backend left it counted: one block leaves it, by a branch on `setp.CMP %p, %i, C`
 * in that block, where %i's one definition in the loop is `add %i, %i, S` (in the same block,
 * so that its order to the test is known) and the block that enters the loop sets it by
 * `mov %i, I`; C, S and I are constants. 0 where it is not such a loop. */
int constant_trips(const std::vector<Block> &blocks, const std::vector<int> &loop, int preheader) {
    const std::set<int> in(loop.begin(), loop.end());
    int exiting = -1;
    for (int b : loop) {
        for (int s : blocks[b].successors) {
            if (in.count(s)) continue;
            if (exiting >= 0 && exiting != b) return 0;
            exiting = b;
        }
    }
    if (exiting < 0) return 0;
    const Block &e = blocks[exiting];
    const Instruction &branch = e.body.back();
    if (!branch.predicated || !is_branch(branch, Isa::Ptx) || e.taken < 0) return 0;
    const bool negated = starts_with(branch.guard, "@!");
    const std::string predicate = branch.guard.substr(negated ? 2 : 1);
    const bool repeats_when_taken = in.count(e.taken) > 0;
    // The test: the last setp of the predicate in the exiting block, a register against a constant.
    int test = -1;
    for (int p = (int)e.body.size() - 2; p >= 0 && test < 0; p--) {
        const Instruction &i = e.body[p];
        if (!i.operands.empty() && i.operands[0] == predicate) test = starts_with(i.opcode, "setp.") ? p : -2;
    }
    if (test < 0) return 0;
    const Instruction &setp = e.body[test];
    std::vector<std::string> parts;
    std::istringstream words(setp.opcode);
    for (std::string w; std::getline(words, w, '.');) parts.push_back(w);
    if (parts.size() != 3 || setp.operands.size() != 3) return 0;
    std::string cmp = parts[1];
    std::string counter = setp.operands[1];
    std::optional<int64_t> bound = immediate(setp.operands[2]);
    if (!bound) {  // `C op %i`: the same test mirrored
        static const std::map<std::string, std::string> mirrored = {
            {"eq", "eq"}, {"ne", "ne"}, {"lt", "gt"}, {"gt", "lt"}, {"le", "ge"},
            {"ge", "le"}, {"lo", "hi"}, {"hi", "lo"}, {"ls", "hs"}, {"hs", "ls"}};
        bound = immediate(setp.operands[1]);
        counter = setp.operands[2];
        auto m = mirrored.find(cmp);
        if (!bound || m == mirrored.end()) return 0;
        cmp = m->second;
    }
    // The counter's step: its only definition in the loop, an add of a constant in the exiting block.
    auto defines = [&](const Instruction &i) { return !i.operands.empty() && i.operands[0] == counter; };
    int step_at = -1;
    std::optional<int64_t> step;
    for (int b : loop) {
        for (size_t p = 0; p < blocks[b].body.size(); p++) {
            const Instruction &i = blocks[b].body[p];
            if (!defines(i) || starts_with(i.opcode, "setp.")) continue;
            if (step_at >= 0 || b != exiting || !starts_with(i.opcode, "add.") || i.operands.size() != 3) return 0;
            step_at = (int)p;
            if (i.operands[1] == counter) step = immediate(i.operands[2]);
            if (i.operands[2] == counter) step = immediate(i.operands[1]);
        }
    }
    if (step_at < 0 || !step || *step == 0) return 0;
    // Its start: the last definition before the loop, in the block that enters it, a constant
    // moved into it, perhaps through other registers (`mov %r2, 0; mov %r3, %r2`).
    const std::vector<Instruction> &entry = blocks[preheader].body;
    std::optional<int64_t> start;
    std::string value = counter;
    for (int p = (int)entry.size() - 1; p >= 0 && !start; p--) {
        const Instruction &i = entry[p];
        if (i.operands.empty() || i.operands[0] != value) continue;
        if (!starts_with(i.opcode, "mov.") || i.operands.size() != 2) return 0;
        start = immediate(i.operands[1]);
        value = i.operands[1];
    }
    if (!start) return 0;
    const bool tests_after_step = step_at < test;
    int64_t v = *start;
    for (int trips = 1; trips <= max_runs; trips++) {
        if (tests_after_step) v += *step;
        const std::optional<bool> holds = compare(cmp, parts[2], v, *bound);
        if (!holds) return 0;
        if (!tests_after_step) v += *step;
        if ((*holds != negated) != repeats_when_taken) return trips;
    }
    return 0;
}

/** How many times each block of `loop` runs in one of its iterations: 1, times the trips of
 * each inner loop that holds it (nested loops multiply). An inner loop is a loop of the
 * blocks once the edges back to `loop`'s entries (its blocks entered from outside it or at
 * the kernel's start: LLVM may rotate a loop to enter it at two) are cut, which leaves every
 * entry outside any inner loop; its trips, where they are a constant (constant_trips(); PTX
 * only) and keep its blocks within max_runs, are added to `trips`, and where not it counts
 * once and `uncounted` grows. */
void weigh_inner_loops(const std::vector<Block> &blocks, const std::vector<std::vector<int>> &predecessors,
                       const std::vector<int> &loop, Isa isa, std::map<int, int64_t> *weight, std::vector<int> *trips,
                       int *uncounted) {
    const std::set<int> in(loop.begin(), loop.end());
    std::set<int> entries = {0};  // the kernel's first block, if the loop holds it
    for (int b : loop) {
        for (int p : predecessors[b]) {
            if (!in.count(p)) entries.insert(b);
        }
    }
    std::vector<std::vector<int>> successors(loop.size());
    for (size_t i = 0; i < loop.size(); i++) {
        for (int s : blocks[loop[i]].successors) {
            if (in.count(s) && !entries.count(s)) {
                successors[i].push_back((int)(std::lower_bound(loop.begin(), loop.end(), s) - loop.begin()));
            }
        }
    }
    std::vector<std::vector<int>> inners = loops_of(successors);
    for (std::vector<int> &inner : inners) {
        for (int &i : inner) i = loop[i];
    }
    std::sort(inners.begin(), inners.end());  // in textual order
    for (const std::vector<int> &inner : inners) {
        const int preheader = isa == Isa::Ptx ? preheader_of(inner, predecessors) : -1;
        int t = preheader >= 0 ? constant_trips(blocks, inner, preheader) : 0;
        for (int b : inner) {
            if ((*weight)[b] * t > max_runs) t = 0;
        }
        if (t > 0) {
            trips->push_back(t);
            for (int b : inner) (*weight)[b] *= t;
        } else {
            (*uncounted)++;
        }
        weigh_inner_loops(blocks, predecessors, inner, isa, weight, trips, uncounted);
    }
}

MainLoopReport count(const std::string &name, const std::vector<Block> &blocks, const std::vector<int> &loop, Isa isa,
                     bool tensor_cores) {
    MainLoopReport r;
    r.kernel = name;
    r.found = true;
    r.sass = isa == Isa::Sass;
    r.tensor_cores = tensor_cores;
    r.blocks = (int)loop.size();
    std::vector<std::vector<int>> predecessors(blocks.size());
    for (size_t b = 0; b < blocks.size(); b++) {
        for (int s : blocks[b].successors) predecessors[s].push_back((int)b);
    }
    std::map<int, int64_t> weight;  // each block's runs in one iteration
    for (int b : loop) weight[b] = 1;
    weigh_inner_loops(blocks, predecessors, loop, isa, &weight, &r.inner_loop_trips, &r.inner_loops_counted_once);
    std::map<std::string, int> other;
    std::vector<bool> is_work;  // in textual order, a block repeated by its runs
    for (int b : loop) {
        const int runs = (int)weight[b];
        for (const Instruction &i : blocks[b].body) {
            r.instructions += runs;
            const Role role = role_of(i, isa, tensor_cores);
            if (role == Role::Other && i.predicated && is_branch(i, isa)) r.conditional_branches++;
            int *counter = nullptr;
            switch (role) {
            case Role::Work:
                counter = &r.work;
                break;
            case Role::Ldmatrix:
                counter = &r.ldmatrix;
                break;
            case Role::CpAsync:
                counter = &r.cp_async[copy_bytes(i, isa)];
                break;
            case Role::Commit:
                counter = &r.commits;
                break;
            case Role::Wait:
                counter = &r.waits;
                break;
            case Role::SharedLoad:
                counter = &r.shared_loads;
                break;
            case Role::SharedStore:
                counter = &r.shared_stores;
                break;
            case Role::GlobalLoad:
                counter = &r.global_loads;
                break;
            case Role::Barrier:
                counter = &r.barriers;
                break;
            case Role::RetypingMove:
                counter = &r.retyping_moves;
                break;
            case Role::Other:
                counter = &r.other;
                other[never_executed(i) ? i.guard + " " + family(i.opcode) : family(i.opcode)] += runs;
                break;
            }
            *counter += runs;
        }
        // A retyping move issues nothing, so it takes no place in a stretch either.
        for (int run = 0; run < runs; run++) {
            for (const Instruction &i : blocks[b].body) {
                const Role role = role_of(i, isa, tensor_cores);
                if (role != Role::RetypingMove) is_work.push_back(role == Role::Work);
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

/** Each kernel's main loop: the loop holding the most mma.sync; where none does, the most fp32
 * fma. */
std::vector<MainLoopReport> main_loops_of(const std::vector<Kernel> &kernels, Isa isa) {
    std::vector<MainLoopReport> reports;
    for (const Kernel &k : kernels) {
        std::vector<std::vector<int>> successors;
        for (const Block &b : k.blocks) successors.push_back(b.successors);
        const std::vector<std::vector<int>> loops = loops_of(successors);
        auto work_in = [&](const std::vector<int> &loop, bool tensor_cores) {
            int n = 0;
            for (int b : loop) {
                for (const Instruction &i : k.blocks[b].body) n += role_of(i, isa, tensor_cores) == Role::Work;
            }
            return n;
        };
        MainLoopReport r;
        r.kernel = k.name;
        r.sass = isa == Isa::Sass;
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
                r = count(k.name, k.blocks, *best, isa, tensor_cores);
                break;
            }
        }
        reports.push_back(r);
    }
    return reports;
}

}  // namespace

int MainLoopReport::cp_async_total() const {
    int n = 0;
    for (const auto &c : cp_async) n += c.second;
    return n;
}

std::vector<MainLoopReport> main_loops(const std::string &ptx) {
    return main_loops_of(kernels_of(ptx), Isa::Ptx);
}

std::vector<MainLoopReport> main_loops_sass(const std::string &listing) {
    return main_loops_of(kernels_of_sass(listing), Isa::Sass);
}

std::string describe_iteration(const MainLoopReport &r) {
    std::ostringstream os;
    if (!r.found) {
        // (ptxas unrolls a loop of few constant trips: its work is then straight-line code.)
        os << (r.sass ? "no loop holds HMMA or FFMA (ptxas may have unrolled it)" :
                        "no loop holds mma.sync or fp32 fma");
        return os.str();
    }
    // The same roles under each listing's names.
    const char *work = r.tensor_cores ? (r.sass ? "HMMA" : "mma.sync") : (r.sass ? "FFMA" : "fma.f32");
    os << r.work << " " << work;
    auto item = [&](int n, const char *ptx, const char *sass) {
        if (n) os << ", " << n << " " << (r.sass ? sass : ptx);
    };
    item(r.ldmatrix, "ldmatrix", "LDSM");
    for (const auto &[bytes, n] : r.cp_async) {
        os << ", " << n << (r.sass ? " LDGSTS" : " cp.async") << " of " << bytes << " B";
    }
    item(r.shared_loads, "ld.shared", "LDS");
    item(r.shared_stores, "st.shared", "STS");
    item(r.global_loads, "ld.global", "LDG");
    item(r.barriers, "barrier", "BAR");
    item(r.commits, "commit", "LDGDEPBAR");
    item(r.waits, "wait", "DEPBAR");
    os << ", " << r.other << " other";
    for (size_t o = 0; o < r.other_by_opcode.size() && o < 6; o++) {
        os << (o ? ", " : " (") << r.other_by_opcode[o].first << " " << r.other_by_opcode[o].second;
    }
    os << (r.other_by_opcode.empty() ? "" : ")") << "; " << std::fixed << std::setprecision(2)
       << r.overhead_per_work() << " instructions per " << work << " beside it; " << r.blocks << " blocks, "
       << r.conditional_branches << " conditional branches, longest stretch " << r.longest_stretch << " without "
       << work;
    if (!r.inner_loop_trips.empty()) {
        os << "; inner loops counted by their trips:";
        for (int t : r.inner_loop_trips) os << " " << t;
    }
    if (r.inner_loops_counted_once) {
        os << "; " << r.inner_loops_counted_once << " inner loop" << (r.inner_loops_counted_once > 1 ? "s" : "")
           << " counted once (" << (r.sass ? "SASS" : "no constant trip count") << ")";
    }
    return os.str();
}

std::string to_string(const MainLoopReport &r) {
    return "main loop of " + r.kernel + ": " + describe_iteration(r);
}

}  // namespace alcop
