#ifndef ALCOP_TEST_PTXAS_H
#define ALCOP_TEST_PTXAS_H

// Runs ptxas as CMake found it (find_program(ALCOP_PTXAS ptxas), defined on the test targets
// that assemble) on a PTX text. The one place the tests write PTX to a file: its own file per
// process (ctest -j runs a test and its binary's shuffled run at once), removed once ptxas has
// read it, so that repeated runs leave nothing behind.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace ptxas {

/** ptxas's path, or "" where the build found none. */
inline std::string path() {
#ifdef ALCOP_PTXAS
    return ALCOP_PTXAS;
#else
    return "";
#endif
}

/** What `ptxas -v -arch=<arch>` says of `ptx` (stdout and stderr), with its exit status in
 * *status: -1, and "", where the build found no ptxas. `tag` names the temporary file. */
inline std::string run(const std::string &ptx, const std::string &arch, const std::string &tag, int *status) {
    *status = -1;
    if (path().empty()) return "";
    const char *tmp = getenv("TEST_TMPDIR");  // ctest's, or a user's: never assumed to be /tmp
    const std::string file = std::string(tmp && *tmp ? tmp : "/tmp") + "/alcop_" + tag + "_" + arch + "_" +
                             std::to_string(getpid()) + ".ptx";
    std::ofstream(file) << ptx;
    const std::string cmd = path() + " -v -arch=" + arch + " " + file + " -o /dev/null 2>&1";
    std::string log;
    FILE *p = popen(cmd.c_str(), "r");
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        log += line;
    }
    *status = p ? pclose(p) : -1;
    std::remove(file.c_str());
    return log;
}

}  // namespace ptxas

#endif
