// Runs commands for tests: through the shell with captured output (the
// command-line tools), or as a child process that a test can kill.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
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
// if still running. Piped, its stdin and stdout are pipes to the test, which
// steps it by writing to it and waits for what it prints (never a sleep).
class ChildProcess {
public:
    explicit ChildProcess(const std::vector<std::string> &argv, bool piped = false)
    {
        std::vector<char *> args;
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        int in[2] = {-1, -1}, out[2] = {-1, -1};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        if (piped) {
            // stdin is a socket pair so that a write to a child that died
            // fails with EPIPE rather than raising SIGPIPE in the test.
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0) {
                posix_spawn_file_actions_destroy(&actions);
                return;
            }
            // dup2 onto 0 and 1 clears close-on-exec there only.
            posix_spawn_file_actions_adddup2(&actions, in[0], 0);
            posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        }
        if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&actions);
        if (piped) {
            ::close(in[0]);
            ::close(out[1]);
            input_ = in[1];
            output_ = fdopen(out[0], "r");
        }
    }
    ~ChildProcess()
    {
        close_input();
        if (output_) fclose(output_);
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

    // Piped only: one byte to its stdin; false when it is gone.
    bool send(char c) const { return input_ >= 0 && ::send(input_, &c, 1, MSG_NOSIGNAL) == 1; }
    // Piped only: the next line it prints, without the newline; false once
    // its output ends.
    bool read_line(std::string &line) const
    {
        line.clear();
        if (!output_) return false;
        for (int c; (c = fgetc(output_)) != EOF;) {
            if (c == '\n') return true;
            line += static_cast<char>(c);
        }
        return !line.empty();
    }
    // Piped only: end of its input.
    void close_input()
    {
        if (input_ >= 0) ::close(input_);
        input_ = -1;
    }

private:
    pid_t pid_ = -1;
    int input_ = -1;
    FILE *output_ = nullptr;
};
