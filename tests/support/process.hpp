// Runs a command line through the shell and captures its output and exit
// status, for tests of the command-line tools.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct CommandResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string &command)
{
    CommandResult r;
    FILE *pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
    int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}
