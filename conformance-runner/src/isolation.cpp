#include "isolation.hpp"

#include "guarded_buffer.hpp"

#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

extern char **environ;

namespace kvblob::conformance {

const char *to_string(Status s)
{
    switch (s) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL";
    case Status::not_supported: return "NOT_SUPPORTED";
    case Status::skipped: return "SKIPPED";
    case Status::timeout: return "TIMEOUT";
    case Status::crash: return "CRASH";
    case Status::xfail: return "XFAIL";
    case Status::xpass: return "XPASS";
    }
    return "?";
}

namespace {

// The last `lines` lines of text; a trailing newline ends the last line.
std::string last_lines(const std::string &text, int lines)
{
    size_t end = text.size();
    if (end > 0 && text[end - 1] == '\n') --end;
    size_t newline = end;  // the newline before the lines kept so far
    for (int n = 0; n < lines; ++n) {
        newline = newline == 0 ? std::string::npos : text.rfind('\n', newline - 1);
        if (newline == std::string::npos) return text.substr(0, end);
    }
    return text.substr(newline + 1, end - newline - 1);
}

// How a reaped process ended, for a message: "killed by signal ..." or
// "exit status N".
std::string how_ended(int status)
{
    return WIFSIGNALED(status) ? std::string("killed by signal ") + strsignal(WTERMSIG(status))
                               : "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

// "; last stderr: " and its last lines, or nothing when it wrote none.
std::string stderr_tail(const std::string &err) { return err.empty() ? "" : "; last stderr: " + last_lines(err, 5); }

volatile sig_atomic_t stop_flag = 0;

// Where the child writes its result; the fault handler writes there too.
int result_fd = -1;

void append_hex(char *&out, uintptr_t v)
{
    *out++ = '0';
    *out++ = 'x';
    for (int shift = 60; shift >= 0; shift -= 4) *out++ = "0123456789abcdef"[(v >> shift) & 0xF];
}

// A fault inside guarded memory is the driver touching a guard page, or a
// span after it said access ended: a FAIL of R-REG-3, not a crash. Any
// other fault falls through to the default action (CRASH).
void on_fault(int sig, siginfo_t *info, void *)
{
    if (result_fd >= 0 && is_guarded_address(info->si_addr)) {
        char msg[256];
        char *out = msg;
        const char head[] = "FAIL\n[R-REG-3] the driver touched guarded memory at ";
        for (const char *p = head; *p; ++p) *out++ = *p;
        append_hex(out, reinterpret_cast<uintptr_t>(info->si_addr));
        const char tail[] = " (a guard page beside a span, or a span after its access ended)";
        for (const char *p = tail; *p; ++p) *out++ = *p;
        *out++ = '\0';  // the record's end: it replaces any verdict before it
        (void)!write(result_fd, msg, static_cast<size_t>(out - msg));
        _exit(0);
    }
    // Any other signal takes its default action: raised again here, it is
    // delivered as the handler returns (a raise()d SIGSEGV has no access to
    // re-run, so merely returning would swallow it).
    signal(sig, SIG_DFL);
    raise(sig);
}

void report_guarded_faults(int fd)
{
    result_fd = fd;
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

void request_stop() { stop_flag = 1; }
bool stop_requested() { return stop_flag != 0; }

namespace {

// The verdict among a check's records (run_child_body): the last one wins
// (a fault handler's FAIL after a PASS); nullopt when none came whole.
std::optional<Outcome> verdict_of(const std::string &result)
{
    std::optional<Outcome> verdict;
    size_t at = 0;
    for (size_t end; (end = result.find('\0', at)) != std::string::npos; at = end + 1) {
        const std::string record = result.substr(at, end - at);
        const auto nl = record.find('\n');
        const std::string word = record.substr(0, nl);
        for (Status s : {Status::pass, Status::fail, Status::not_supported})
            if (word == to_string(s)) verdict = Outcome{s, nl == std::string::npos ? "" : record.substr(nl + 1)};
        if (!verdict && record.rfind("left ", 0) != 0) verdict = Outcome{Status::crash, "unreadable result: " + word};
    }
    return verdict;
}

// The cleanup's record of what the check left, if it came whole; none when
// its cleanup never said.
std::optional<std::string> left_record(const std::string &result)
{
    std::optional<std::string> record;
    size_t at = 0;
    for (size_t end; (end = result.find('\0', at)) != std::string::npos; at = end + 1)
        if (result.compare(at, 5, "left ") == 0) record = result.substr(at, end - at);
    return record;
}

// Reads the child's result (fd 3) and stderr until both close, the deadline
// passes or a stop is requested, then reaps it. Once a verdict came whole,
// the deadline moves to timeout_s from then: the cleanup has a time of its
// own, and only a cleanup that outlasts it too turns a verdict into TIMEOUT.
Outcome collect(pid_t pid, int result_fd_read, int err_fd_read, unsigned timeout_s, Spawned *raw)
{
    // Collect stderr while waiting, so a chatty child never blocks on a full pipe.
    std::string err, result;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool timed_out = false, verdict_in = false;
    pollfd fds[2] = {{result_fd_read, POLLIN, 0}, {err_fd_read, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        if (stop_requested()) break;
        // Wake at least every 100 ms to notice a stop request.
        if (poll(fds, 2, static_cast<int>(std::min<long>(left.count(), 100))) <= 0) continue;
        for (auto &f : fds) {
            if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
            char buf[4096];
            ssize_t n = read(f.fd, buf, sizeof buf);
            if (n <= 0) {
                f.fd = -1;
                --open_fds;
            } else {
                (f.fd == result_fd_read ? result : err).append(buf, static_cast<size_t>(n));
            }
        }
        if (!verdict_in && result.find('\0') != std::string::npos) {
            verdict_in = true;
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
        }
    }
    const bool interrupted = !timed_out && open_fds > 0;  // left the loop on a stop request
    if (timed_out || interrupted) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(result_fd_read);
    close(err_fd_read);
    if (raw) *raw = {result, err, status, timed_out, interrupted};
    // A check that did not end left what it wrote, and nobody counted it.
    const auto record = left_record(result);
    const Leftover left = record ? from_wire(*record)
                                 : Leftover{0, 0, false,
                                            verdict_in ? "the check's cleanup did not finish; its keys were not all removed"
                                                       : "the check did not finish; its keys were not removed"};
    if (auto verdict = verdict_of(result)) {
        verdict->left = left;
        // The cleanup removes the check's keys and closes its drivers: a
        // driver that crashes or hangs there breaks the contract as surely
        // as in the check's body, so it is not hidden behind the verdict
        // that came before. A failure stays the failure it was.
        if (record || interrupted || verdict->status == Status::fail) return *verdict;
        const std::string before = verdict->status == Status::pass ? "passed" : std::string("was ") + to_string(verdict->status);
        const std::string cleanup = "then its cleanup (removing the check's keys, closing its drivers) ";
        if (timed_out)
            return {Status::timeout, "the check " + before + ", " + cleanup + "ran out of " + std::to_string(timeout_s) + " s",
                    left};
        return {Status::crash,
                "the check " + before + ", " + cleanup + "ended with its process (" + how_ended(status) + ")" + stderr_tail(err),
                left};
    }
    if (timed_out) return {Status::timeout, "no answer within " + std::to_string(timeout_s) + " s", left};
    if (interrupted) return {Status::skipped, "interrupted", left};
    if (WIFSIGNALED(status)) return {Status::crash, how_ended(status) + stderr_tail(err), left};
    return {Status::crash, "the check exited without a result (" + how_ended(status) + ")" + stderr_tail(err), left};
}

}  // namespace

namespace {
void write_record(int fd, std::string record)
{
    record.push_back('\0');
    for (size_t done = 0; done < record.size();) {
        const ssize_t n = write(fd, record.data() + done, record.size() - done);
        if (n <= 0) return;
        done += static_cast<size_t>(n);
    }
}
}  // namespace

void run_child_body(const std::function<Outcome()> &body, const std::function<Leftover()> &clean_up, int fd)
{
    report_guarded_faults(fd);
    const Outcome o = body();
    std::string verdict = std::string(to_string(o.status)) + "\n" + o.message;
    std::replace(verdict.begin(), verdict.end(), '\0', ' ');
    write_record(fd, verdict);
    write_record(fd, to_wire(clean_up()));
    _exit(0);  // no destructors: a broken driver's threads may still run
}

Outcome run_spawned(const std::vector<std::string> &args, unsigned timeout_s, Spawned *raw)
{
    // A fresh process image, not a fork: a driver (or an SDK under it) that
    // started threads at load or open holds no lock in a copy of them.
    int result_pipe[2], err_pipe[2];
    if (pipe2(result_pipe, O_CLOEXEC) != 0) return {Status::crash, "pipe() failed"};
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        close(result_pipe[0]);
        close(result_pipe[1]);
        return {Status::crash, "pipe() failed"};
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, result_pipe[1], child_result_fd);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    std::vector<char *> argv;
    for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    fflush(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(result_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(result_pipe[0]);
        close(err_pipe[0]);
        return {Status::crash, std::string("posix_spawn(/proc/self/exe) failed: ") + strerror(rc)};
    }
    return collect(pid, result_pipe[0], err_pipe[0], timeout_s, raw);
}

}  // namespace kvblob::conformance
