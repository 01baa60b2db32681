#include "VariantBuild.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace alcop {
namespace variants {

namespace {

std::string quote(const std::string &s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,/:@%") ==
                          std::string::npos) {
        return s;
    }
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

void make_directories(const std::string &dir) {
    for (size_t i = 1; i <= dir.size(); i++) {
        if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0755);
    }
}

/** Starts `command` under /bin/sh with its output in `log`. */
pid_t start(const std::string &command, const std::string &log) {
    const pid_t pid = fork();
    if (pid == 0) {
        const std::string redirected = "exec > " + quote(log) + " 2>&1; " + command;
        execl("/bin/sh", "sh", "-c", redirected.c_str(), (char *)nullptr);
        _exit(127);
    }
    return pid;
}

}  // namespace

std::string command_line(const Generation &g, const std::string &dir, const std::string &cxx) {
    std::ostringstream os;
    for (const std::string &e : g.env) os << quote(e) << " ";
    os << quote(g.generator_exe) << " -g " << quote(g.generator) << " -f " << quote(g.function) << " -n "
       << quote(g.function) << " -o " << quote(dir) << " -e object";
    for (const std::string &e : g.extra_outputs) os << "," << e;
    if (!g.plugins.empty()) {
        os << " -p ";
        for (size_t i = 0; i < g.plugins.size(); i++) os << (i ? "," : "") << quote(g.plugins[i]);
    }
    if (!g.autoscheduler.empty()) os << " -s " << quote(g.autoscheduler);
    os << " target=" << quote(g.target + "-no_runtime");
    for (const std::string &p : g.params) os << " " << quote(p);
    const std::string base = dir + "/" + g.function;
    // The object is removed once linked: a few hundred variants carried to a GPU machine are
    // half the size without.
    os << " && " << quote(cxx) << " -shared -o " << quote(base + ".so") << " " << quote(base + ".o") << " && rm "
       << quote(base + ".o");
    return os.str();
}

std::vector<Built> build_all(const std::vector<Generation> &gens, const std::string &dir, const std::string &cxx,
                             int jobs) {
    make_directories(dir);
    if (jobs <= 0) jobs = std::max(1u, std::thread::hardware_concurrency());
    std::vector<Built> built(gens.size());
    std::map<pid_t, size_t> running;
    size_t next = 0;
    while (next < gens.size() || !running.empty()) {
        while (next < gens.size() && (int)running.size() < jobs) {
            Built &b = built[next];
            const std::string base = dir + "/" + gens[next].function;
            b.library = base + ".so";
            b.log = base + ".log";
            b.command = command_line(gens[next], dir, cxx);
            const pid_t pid = start(b.command, b.log);
            if (pid < 0) {
                b.ok = false;  // fork failed: reported through the log's absence
                next++;
                continue;
            }
            running[pid] = next++;
        }
        if (running.empty()) break;
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        auto it = running.find(pid);
        if (it == running.end()) continue;  // a child the caller started
        built[it->second].ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        running.erase(it);
    }
    return built;
}

std::string read_text(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace variants
}  // namespace alcop
