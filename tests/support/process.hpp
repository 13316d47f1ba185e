// Runs commands for tests: through the shell with captured output (the
// command-line tools), or as a child process that a test can kill.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

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

// A child process started without a shell, killed and reaped at scope exit
// if still running.
class ChildProcess {
public:
    explicit ChildProcess(const std::vector<std::string> &argv)
    {
        std::vector<char *> args;
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
    }
    ~ChildProcess()
    {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            wait();
        }
    }
    ChildProcess(const ChildProcess &) = delete;
    ChildProcess &operator=(const ChildProcess &) = delete;

    bool started() const { return pid_ > 0; }
    void kill(int sig) const
    {
        if (pid_ > 0) ::kill(pid_, sig);
    }
    // Reaps the child: its exit code, or 128 + the signal that ended it.
    int wait()
    {
        int status = 0;
        if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return -1;
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

private:
    pid_t pid_ = -1;
};
