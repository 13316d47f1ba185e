#include "isolation.hpp"

#include "fault_site.hpp"
#include "guarded_buffer.hpp"
#include "report.hpp"
#include "starvation.hpp"

#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
    case Status::blocked: return "BLOCKED";
    case Status::not_exercised: return "NOT_EXERCISED";
    case Status::starved: return "TIMEOUT";
    }
    return "?";
}

std::string how_ended(int status)
{
    return WIFSIGNALED(status) ? std::string("killed by signal ") + strsignal(WTERMSIG(status))
                               : "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
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

// "; last stderr: " and its last lines, or nothing when it wrote none.
std::string stderr_tail(const std::string &err) { return err.empty() ? "" : "; last stderr: " + last_lines(err, 5); }

volatile sig_atomic_t stop_flag = 0;

// Where the fault handler writes (child_fault_fd once the child reports).
int fault_fd = -1;

void append_hex(char *&out, uintptr_t v)
{
    *out++ = '0';
    *out++ = 'x';
    for (int shift = 60; shift >= 0; shift -= 4) *out++ = "0123456789abcdef"[(v >> shift) & 0xF];
}

// A fault inside guarded memory is the driver touching a guard page, or a
// span after it said access ended: a FAIL of R-REG-3, not a crash. Its
// address goes to the fault channel (the runner words the FAIL). Any other
// fault falls through to the default action (CRASH).
// Whether the faulting access was a write: 1, 0, or -1 where the machine's
// context does not say (x86-64's page-fault error code does).
int was_write(void *context)
{
#if defined(__x86_64__) && defined(REG_ERR)
    return (static_cast<ucontext_t *>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)context;
    return -1;
#endif
}

// The fault is noted (fault_site.hpp) and goes to the fault channel; then
// the touched guard page is lifted and the driver goes on, so the check and
// its cleanup end as they would (what the check left is counted, not
// unknown), and the check's FAIL names the row and offset. A touch of a
// mapping's outermost page (the driver ran on past four guard pages) still
// ends the process there.
void on_fault(int sig, siginfo_t *info, void *context)
{
    if (fault_fd >= 0 && is_guarded_address(info->si_addr)) {
        char msg[32];
        char *out = msg;
        append_hex(out, reinterpret_cast<uintptr_t>(info->si_addr));
        *out++ = '\n';
        (void)!write(fault_fd, msg, static_cast<size_t>(out - msg));
        note_guarded_fault(info->si_addr, was_write(context));
        if (lift_guard(info->si_addr)) return;
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
    fault_fd = fd;
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

namespace {
std::optional<std::chrono::steady_clock::time_point> run_deadline;

// A verdict's word on the report channel: the status's own, but for a
// starved check, which is shown as TIMEOUT and must not read as one.
const char *wire_word(Status s) { return s == Status::starved ? "STARVED" : to_string(s); }
}  // namespace

void request_stop() { stop_flag = 1; }
void set_run_deadline(std::chrono::steady_clock::time_point deadline) { run_deadline = deadline; }
bool run_deadline_passed() { return run_deadline && std::chrono::steady_clock::now() >= *run_deadline; }
bool stop_requested() { return stop_flag != 0 || run_deadline_passed(); }

void adopt_orphans() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

namespace {

// The verdict among a check's records (run_child_body): the last one wins
// (a fault handler's FAIL after a PASS); nullopt when none came whole.
std::optional<Outcome> verdict_of(const std::vector<std::string> &records)
{
    std::optional<Outcome> verdict;
    for (const auto &record : records) {
        const auto nl = record.find('\n');
        const std::string word = record.substr(0, nl);
        for (Status s : {Status::pass, Status::fail, Status::not_supported, Status::blocked, Status::not_exercised,
                         Status::starved})
            if (word == wire_word(s)) verdict = Outcome{s, nl == std::string::npos ? "" : record.substr(nl + 1)};
        if (!verdict && record.rfind("left ", 0) != 0 && !is_check_metrics_record(record)) verdict = Outcome{Status::crash, "unreadable result: " + word};
    }
    return verdict;
}

// The cleanup's record of what the check left, if it came whole; none when
// its cleanup never said.
std::optional<std::string> left_record(const std::vector<std::string> &records)
{
    std::optional<std::string> found;
    for (const auto &record : records)
        if (record.rfind("left ", 0) == 0) found = record;
    return found;
}

// Text read from a pipe: the first `limit` bytes (the report channel: what
// comes after is no check's), or the last (stderr: the end says most).
class Capture {
public:
    Capture(size_t limit, bool keep_tail) : limit_(limit), keep_tail_(keep_tail) {}
    void add(const char *data, size_t size)
    {
        total_ += size;
        if (!keep_tail_) {
            const size_t room = text_.size() < limit_ ? limit_ - text_.size() : 0;
            text_.append(data, std::min(room, size));
            overflowed_ = overflowed_ || size > room;
            return;
        }
        text_.append(data, size);
        // Trimmed in halves, so that a flood costs a copy per limit's worth.
        if (text_.size() > 2 * limit_) {
            text_.erase(0, text_.size() - limit_);
            overflowed_ = true;
        }
    }
    std::string take()
    {
        if (keep_tail_ && text_.size() > limit_) text_.erase(0, text_.size() - limit_);
        return std::move(text_);
    }
    const std::string &text() const { return text_; }
    bool overflowed() const { return overflowed_; }
    uint64_t total() const { return total_; }  // every byte read, kept or not

private:
    size_t limit_;
    bool keep_tail_;
    bool overflowed_ = false;
    uint64_t total_ = 0;
    std::string text_;
};

// What c kept, where it dropped the start of the text, from its first whole
// line on, or marked cut where it kept less than a line: the start of a
// line cut short may be the end of a secret.
std::string from_a_line_start(Capture &c)
{
    const uint64_t total = c.total();
    std::string text = c.take();
    if (total <= text.size()) return text;
    const size_t newline = text.find('\n');
    if (newline != std::string::npos && newline + 1 < text.size()) return text.substr(newline + 1);
    return std::string(cut_mark) + text;
}

// Reads what is ready on the open descriptors of fds into their captures,
// waiting at most wait_ms; a descriptor at its end is closed and set to -1.
void read_ready(pollfd *fds, Capture **into, int count, int wait_ms)
{
    if (poll(fds, static_cast<nfds_t>(count), wait_ms) <= 0) return;
    for (int i = 0; i < count; ++i) {
        pollfd &f = fds[i];
        if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[65536];
        const ssize_t n = read(f.fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            close(f.fd);
            f.fd = -1;
        } else {
            into[i]->add(buf, static_cast<size_t>(n));
        }
    }
}

// Whether the child exited (left unreaped: its pid, and so its process
// group's id, stays its own until it is reaped).
bool has_exited(pid_t pid)
{
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// This process's children, read from /proc: with no check running, every
// one is a descendant of a check that left its process group (setsid) and
// was adopted when its parent died (adopt_orphans).
std::vector<pid_t> own_children()
{
    std::vector<pid_t> out;
    const pid_t self = getpid();
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat;
        std::getline(in, stat);
        // pid (comm) state ppid ...: comm may hold spaces and parentheses.
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        char state = 0;
        long ppid = 0;
        if (rest >> state >> ppid && ppid == self) out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return out;
}

// Ends the child's process group (the child and whatever it started that
// stayed in it) and reaps the child, then whatever left the group and was
// adopted by this process as its parents died, generation by generation;
// returns the child's wait status.
int end_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    int status = 0;
    for (;;) {
        int st = 0;
        const pid_t reaped = waitpid(-pid, &st, 0);
        if (reaped == pid) status = st;
        if (reaped < 0 && errno != EINTR) break;  // ECHILD: none of the group is left
    }
    for (int generation = 0; generation < 64; ++generation) {
        const auto adopted = own_children();
        if (adopted.empty()) break;
        for (pid_t orphan : adopted) kill(orphan, SIGKILL);
        for (pid_t orphan : adopted)
            while (waitpid(orphan, nullptr, 0) < 0 && errno == EINTR) {
            }
    }
    return status;
}

Outcome judge(const Records &records, const std::string &fault, int status, const std::string &err_tail,
              bool timed_out, bool interrupted, bool verdict_in, unsigned timeout_s, const WaitFigures &life);

// "machine starved: FIGURES; " before a TIMEOUT's words where the check's
// process got too little of the machine to have answered (starvation.hpp).
std::string starved_prefix(const WaitFigures &life)
{
    return starved(life) ? "machine starved: " + figures_text(life) + "; " : "";
}

// What the fault channel (child_fault_fd) said: the driver touched guarded
// memory at an address. A FAIL of R-REG-3, whatever the check reported
// before it; text that is no address is still a FAIL, named as it came.
Outcome guarded_fault(const std::string &said, const Leftover &left)
{
    std::string at = said.substr(0, said.find('\n'));
    const bool address = at.size() == 18 && at.rfind("0x", 0) == 0 &&
                         at.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
    if (!address) at = "an address its fault channel did not say (it carried " + std::to_string(said.size()) + " bytes)";
    return {Status::fail,
            "[R-REG-3] the driver touched guarded memory at " + at +
                " (a guard page beside a span, or a span after its access ended)",
            left};
}

// Reads the child's records, stderr and stdout until it exits, the deadline passes
// or a stop is requested; then ends its process group and reads what the
// pipes still hold, for at most drain_limit (a descendant that left the
// group may hold them open). Once a verdict came whole, the deadline moves
// to timeout_s from then: the cleanup has a time of its own, and only a
// cleanup that outlasts it too turns a verdict into TIMEOUT.
Outcome collect(pid_t pid, int result_fd_read, int err_fd_read, int out_fd_read, int fault_fd_read,
                const RunKey &key, unsigned timeout_s, Spawned *raw)
{
    constexpr auto drain_limit = std::chrono::seconds(2);
    Capture result(channel_bytes, false), err(stderr_tail_bytes, true), out(stdout_tail_bytes, true),
        fault(256, false);
    Capture *into[4] = {&result, &err, &out, &fault};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool timed_out = false, interrupted = false, verdict_in = false;
    pollfd fds[4] = {
        {result_fd_read, POLLIN, 0}, {err_fd_read, POLLIN, 0}, {out_fd_read, POLLIN, 0}, {fault_fd_read, POLLIN, 0}};
    // The child's end wakes the wait where the kernel offers a pidfd;
    // elsewhere the wait wakes every 100 ms to look.
#ifdef SYS_pidfd_open
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
    const int pidfd = -1;
#endif
    const auto started = std::chrono::steady_clock::now();
    for (;;) {
        if (has_exited(pid)) break;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        if (stop_requested()) {
            interrupted = true;
            break;
        }
        // Wake at least every 100 ms to notice a stop request.
        const int wait_ms = static_cast<int>(std::min<long>(left.count(), 100));
        if (pidfd < 0) {
            read_ready(fds, into, 4, wait_ms);  // with every pipe closed, a plain wait
        } else {
            pollfd all[5] = {fds[0], fds[1], fds[2], fds[3], {pidfd, POLLIN, 0}};
            if (poll(all, 5, wait_ms) > 0) read_ready(fds, into, 4, 0);
        }
        if (!verdict_in && result.text().find('\0') != std::string::npos) {
            verdict_in = true;
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
        }
    }
    // What the machine gave the check's process, read before it is killed:
    // a check that ran out of time on a starved machine decides nothing.
    const WaitFigures life =
        timed_out ? process_figures(pid, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count())
                  : WaitFigures{};
    const int status = end_group(pid);
    if (pidfd >= 0) close(pidfd);
    for (const auto drained = std::chrono::steady_clock::now() + drain_limit;
         (fds[0].fd >= 0 || fds[1].fd >= 0 || fds[2].fd >= 0 || fds[3].fd >= 0) &&
         std::chrono::steady_clock::now() < drained;)
        read_ready(fds, into, 4, 100);
    for (int i = 0; i < 4; ++i)
        if (fds[i].fd >= 0) close(fds[i].fd);
    const bool overflowed = result.overflowed();
    const Records records = read_records(result.take(), key, overflowed);
    const std::string err_tail = from_a_line_start(err);
    const uint64_t out_bytes = out.total();
    const StdoutSeen out_seen{out_bytes, out.take()};
    if (raw) *raw = {records, err_tail, out_seen, status, timed_out, interrupted};
    Outcome o = judge(records, fault.text(), status, err_tail, timed_out, interrupted, verdict_in, timeout_s, life);
    o.out = out_seen;
    o.metrics = check_metrics_of(records.authentic);
    return o;
}

// The outcome of a check from what its child left (collect): its records,
// what its fault channel said.
Outcome judge(const Records &records, const std::string &fault, int status, const std::string &err_tail,
              bool timed_out, bool interrupted, bool verdict_in, unsigned timeout_s, const WaitFigures &life)
{
    // A check that did not end left what it wrote, and nobody counted it.
    const auto record = left_record(records.authentic);
    const Leftover left = record ? from_wire(*record)
                                 : Leftover{0, 0, false,
                                            verdict_in ? "the check's cleanup did not finish; its keys were not all removed"
                                                       : "the check did not finish; its keys were not removed"};
    // Text on the channel that the child did not sign came from code in its
    // process that writes to a descriptor it does not own: nothing the
    // check reported can be told from it.
    if (records.forged_bytes > 0 || records.overflowed)
        return {Status::fail,
                "the check's report channel (descriptor " + std::to_string(child_result_fd) + ") carried " +
                    (records.overflowed ? "more than " + std::to_string(channel_bytes) + " bytes"
                                        : std::to_string(records.forged_bytes) + " bytes") +
                    " the check did not write: code in the driver's process wrote to a descriptor it does not "
                    "own, and what the check reported cannot be trusted",
                left};
    // A fault in guarded memory fails the check, whatever it reported before;
    // the check's own R-REG-3 FAIL names its row and offset (fault_site.hpp).
    auto verdict = verdict_of(records.authentic);
    if (!fault.empty()) {
        if (verdict && verdict->status == Status::fail && failed_rule(*verdict) == "R-REG-3") {
            verdict->left = left;
            return *verdict;
        }
        return guarded_fault(fault, left);
    }
    if (verdict) {
        verdict->left = left;
        // The cleanup removes the check's keys and closes its drivers: a
        // driver that crashes or hangs there breaks the contract as surely
        // as in the check's body, so it is not hidden behind the verdict
        // that came before. A failure stays the failure it was.
        if (record || interrupted || verdict->status == Status::fail) return *verdict;
        const std::string before = verdict->status == Status::pass ? "passed" : std::string("was ") + to_string(verdict->status);
        const std::string cleanup = "then its cleanup (removing the check's keys, closing its drivers) ";
        if (timed_out)
            return {starved(life) ? Status::starved : Status::timeout,
                    starved_prefix(life) + "the check " + before + ", " + cleanup + "ran out of " +
                        std::to_string(timeout_s) + " s",
                    left};
        return {Status::crash,
                "the check " + before + ", " + cleanup + "ended with its process (" + how_ended(status) + ")" +
                    stderr_tail(err_tail),
                left};
    }
    if (timed_out)
        return {starved(life) ? Status::starved : Status::timeout,
                starved_prefix(life) + "no answer within " + std::to_string(timeout_s) + " s", left};
    if (interrupted) return {Status::skipped, "interrupted", left};
    if (WIFSIGNALED(status)) return {Status::crash, how_ended(status) + stderr_tail(err_tail), left};
    return {Status::crash, "the check exited without a result (" + how_ended(status) + ")" + stderr_tail(err_tail), left};
}

}  // namespace

void run_child_body(const std::function<Outcome()> &body, const std::function<Leftover()> &clean_up, int fd,
                    const RunKey &key)
{
    report_guarded_faults(child_fault_fd);
    start_counting_check();
    Outcome o = body();
    // A touch of guarded memory fails the check, whatever it found; named
    // here by its row where the span is known (the runner names the address
    // otherwise, judge below).
    if (auto site = first_fault_text(); !site.empty()) o = {Status::fail, site};
    write_record(key, fd, std::string(wire_word(o.status)) + "\n" + o.message);
    write_record(key, fd, check_metrics_record());
    write_record(key, fd, to_wire(clean_up()));
    _exit(0);  // no destructors: a broken driver's threads may still run
}

Outcome run_spawned(const std::vector<std::string> &args, unsigned timeout_s, Spawned *raw)
{
    // A fresh process image, not a fork: a driver (or an SDK under it) that
    // started threads at load or open holds no lock in a copy of them.
    struct Pipe {
        int fd[2] = {-1, -1};
        ~Pipe()
        {
            for (int f : fd)
                if (f >= 0) close(f);
        }
        int take(int end) { return std::exchange(fd[end], -1); }
    } result, err, out, fault, key;
    if (pipe2(result.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0 || pipe2(out.fd, O_CLOEXEC) != 0 ||
        pipe2(fault.fd, O_CLOEXEC) != 0 || pipe2(key.fd, O_CLOEXEC) != 0)
        return {Status::crash, std::string("pipe() failed: ") + strerror(errno)};
    // A key for this child alone; it fits a pipe's buffer: written whole
    // before the child starts, and wiped here once the child's records are
    // read.
    struct Wiped {
        RunKey k = fresh_key();
        ~Wiped() { explicit_bzero(k.data(), k.size()); }
    } own;
    const RunKey &k = own.k;
    if (write(key.fd[1], k.data(), k.size()) != static_cast<ssize_t>(k.size()))
        return {Status::crash, "could not hand the child its key"};
    close(key.take(1));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, result.fd[1], child_result_fd);
    posix_spawn_file_actions_adddup2(&actions, key.fd[0], child_key_fd);
    posix_spawn_file_actions_adddup2(&actions, fault.fd[1], child_fault_fd);
    posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
    // The runner's stdout carries its report: a driver that writes to its
    // own goes into a pipe the runner reads, keeps a tail of and counts.
    posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
    // A process group of its own: whatever the driver starts stays in it
    // (unless it leaves on purpose), and ends with it.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    std::vector<char *> argv;
    for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    fflush(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(result.take(1));
    close(err.take(1));
    close(out.take(1));
    close(fault.take(1));
    close(key.take(0));
    if (rc != 0) return {Status::crash, std::string("posix_spawn(/proc/self/exe) failed: ") + strerror(rc)};
    return collect(pid, result.take(0), err.take(0), out.take(0), fault.take(0), k, timeout_s, raw);
}

}  // namespace kvblob::conformance
