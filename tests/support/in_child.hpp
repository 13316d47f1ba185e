// A piece of a test run in a forked child: a crash, a hang under alarm() or
// a blown stack ends the child, not the suite, and nothing the child does
// (its resource use, its memory) counts in the test process.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

// What the child wrote back, and how it ended (waitpid's status).
struct ChildAnswer {
    std::string text;
    int status = 0;
    bool exited_zero() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs body() (which returns a std::string) in a child, which writes it
// back whole and exits 0, or 2 when it cannot write it.
template <class Body>
ChildAnswer in_child(Body &&body)
{
    int out[2];
    REQUIRE(pipe(out) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(out[0]);
        const std::string text = body();
        for (size_t done = 0; done < text.size();) {
            const ssize_t n = write(out[1], text.data() + done, text.size() - done);
            if (n <= 0) _exit(2);
            done += static_cast<size_t>(n);
        }
        _exit(0);
    }
    close(out[1]);
    ChildAnswer answer;
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) answer.text.append(buf, static_cast<size_t>(n));
    close(out[0]);
    waitpid(pid, &answer.status, 0);
    return answer;
}
