#include "starvation.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "check.hpp"

namespace kvblob::conformance {

namespace {

double process_cpu_s()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string read_text(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Each live thread's figures (of this process, or of pid), by thread id;
// false where the kernel keeps no schedstat.
bool threads_now(std::map<long, ThreadWait> &out, const std::string &process = "self")
{
    std::error_code ec;
    bool any = false;
    for (const auto &task : std::filesystem::directory_iterator("/proc/" + process + "/task", ec)) {
        const auto figures = schedstat_figures(read_text(task.path().string() + "/schedstat"));
        if (!figures) continue;
        out[std::strtol(task.path().filename().c_str(), nullptr, 10)] = *figures;
        any = true;
    }
    return any;
}

std::optional<double> pressure_now() { return pressure_some_total_s(read_text("/proc/pressure/cpu")); }

std::string seconds(double s)
{
    char text[32];
    std::snprintf(text, sizeof text, s < 0.1 ? "%.3f s" : "%.1f s", s);
    return text;
}

}  // namespace

std::optional<ThreadWait> schedstat_figures(const std::string &line)
{
    std::istringstream in(line);
    unsigned long long on_cpu = 0, runqueue = 0;
    if (!(in >> on_cpu >> runqueue)) return std::nullopt;
    return ThreadWait{static_cast<double>(on_cpu) / 1e9, static_cast<double>(runqueue) / 1e9};
}

std::optional<double> pressure_some_total_s(const std::string &text)
{
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("some ", 0) != 0) continue;
        const auto at = line.find(" total=");
        if (at == std::string::npos) return std::nullopt;
        return std::strtod(line.c_str() + at + 7, nullptr) / 1e6;  // microseconds
    }
    return std::nullopt;
}

bool starved(const WaitFigures &f)
{
    if (!f.longest || f.wall_s <= 0) return false;
    return f.longest->runqueue_s >= 0.75 * f.wall_s && f.longest->cpu_s * 19 < f.longest->runqueue_s;
}

std::string figures_text(const WaitFigures &f)
{
    std::string out = "in " + seconds(f.wall_s) + " of waiting, the check's process ran " + seconds(f.cpu_s) +
                      " of CPU";
    if (f.runqueue_s && f.longest)
        out += " and its threads waited " + seconds(*f.runqueue_s) + " for one (the longest " +
               seconds(f.longest->runqueue_s) + ", running " + seconds(f.longest->cpu_s) + ")";
    else
        out += " (the kernel keeps no run-queue figures: whether it waited for a CPU is unknown)";
    if (f.pressure) {
        char share[32];
        std::snprintf(share, sizeof share, "%.0f%%", 100 * *f.pressure);
        out += std::string("; some task of the machine waited for a CPU ") + share + " of the time";
    }
    return out;
}

WaitWatch::WaitWatch()
    : wall0_(std::chrono::steady_clock::now()), cpu0_(process_cpu_s()), schedstat_(threads_now(threads0_)),
      pressure0_(pressure_now())
{
}

WaitFigures WaitWatch::figures() const
{
    WaitFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    f.cpu_s = process_cpu_s() - cpu0_;
    std::map<long, ThreadWait> now;
    // A thread that ended during the wait takes its figures along: the sum
    // is then short, which can only keep a FAIL a FAIL.
    if (schedstat_ && threads_now(now)) {
        double waited = 0;
        ThreadWait longest;
        for (const auto &[tid, t] : now) {
            const auto before = threads0_.find(tid);
            const ThreadWait was = before == threads0_.end() ? ThreadWait{} : before->second;
            const ThreadWait during{t.cpu_s - was.cpu_s, t.runqueue_s - was.runqueue_s};
            waited += during.runqueue_s;
            if (during.runqueue_s > longest.runqueue_s) longest = during;
        }
        f.runqueue_s = waited;
        f.longest = longest;
    }
    if (const auto p = pressure_now(); p && pressure0_ && f.wall_s > 0)
        f.pressure = std::min(1.0, (*p - *pressure0_) / f.wall_s);
    return f;
}

WaitFigures process_figures(long pid, double wall_s)
{
    WaitFigures f;
    f.wall_s = wall_s;
    std::map<long, ThreadWait> threads;
    if (!threads_now(threads, std::to_string(pid))) return f;
    double waited = 0;
    ThreadWait longest;
    for (const auto &[tid, t] : threads) {
        f.cpu_s += t.cpu_s;
        waited += t.runqueue_s;
        if (t.runqueue_s > longest.runqueue_s) longest = t;
    }
    f.runqueue_s = waited;
    f.longest = longest;
    return f;
}

void fail_after_wait(const WaitFigures &f, const std::string &rule, const std::string &what)
{
    if (starved(f))
        throw Starved("machine starved: " + figures_text(f) + ", too little to decide " + rule + " (" + what +
                      "); rerun on a machine with CPU to spare");
    throw CheckFailure(rule, what + " (" + figures_text(f) + ")");
}

}  // namespace kvblob::conformance
