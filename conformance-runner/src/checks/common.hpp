// What the check files share.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "check.hpp"
#include "context.hpp"

namespace kvblob::conformance {

// Threads a check starts. An exception thrown in one of them (a failed
// expect(), NotSupported) is carried back to the check's own thread by
// join(), so it is reported as the check's FAIL with its rule rather than
// terminating the process.
class CheckThreads {
public:
    CheckThreads(int count, const std::function<void(int)> &body)
    {
        for (int t = 0; t < count; ++t)
            threads_.emplace_back([this, body, t] {
                try {
                    body(t);
                } catch (...) {
                    std::lock_guard lock(mu_);
                    if (!first_error_) first_error_ = std::current_exception();
                }
            });
    }
    CheckThreads(const CheckThreads &) = delete;
    CheckThreads &operator=(const CheckThreads &) = delete;
    ~CheckThreads() { wait(); }

    // Joins every thread, then rethrows the first exception any of them threw.
    void join()
    {
        wait();
        if (first_error_) std::rethrow_exception(first_error_);
    }

private:
    void wait()
    {
        for (auto &t : threads_)
            if (t.joinable()) t.join();
    }
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::exception_ptr first_error_;
};

// A put of n rows of size bytes from src and the get of the same keys into
// dst: row i at offset i * size of each region, keyed by i.
struct RowPairs {
    Batch put, get;
};
inline RowPairs row_pairs(const Context &c, kvblob_region_t *src, kvblob_region_t *dst, size_t n, uint64_t size)
{
    RowPairs pairs;
    for (size_t i = 0; i < n; ++i) {
        pairs.put.row(c.key(std::to_string(i)), {make_span(src, i * size, size)});
        pairs.get.row(c.key(std::to_string(i)), {make_span(dst, i * size, size)});
    }
    return pairs;
}

// The bytes of a buffer at one moment, to compare with later.
inline std::vector<uint8_t> snapshot(const GuardedBuffer &b) { return {b.data(), b.data() + b.size()}; }

// A row result no driver writes: an array filled with it shows which
// elements a driver left alone.
inline constexpr int32_t unwritten = 0x7E7E;

void add_data_checks(std::vector<Check> &out);
void add_admission_checks(std::vector<Check> &out);
void add_hints_checks(std::vector<Check> &out);
void add_admission_checks_after_hints(std::vector<Check> &out);
void add_lifetime_checks(std::vector<Check> &out);
void add_lifetime_racing_checks(std::vector<Check> &out);
void add_lifetime_answer_checks(std::vector<Check> &out);
void add_scenario_checks(std::vector<Check> &out);
void add_remove_checks(std::vector<Check> &out);
void add_open_checks(std::vector<Check> &out);
void add_access_bound_checks(std::vector<Check> &out);
void add_device_checks(std::vector<Check> &out);
void add_refusal_checks(std::vector<Check> &out);
void add_refusal_limit_checks(std::vector<Check> &out);
void add_results_checks(std::vector<Check> &out);
void add_results_wide_checks(std::vector<Check> &out);
void add_cancel_checks(std::vector<Check> &out);
void add_concurrency_checks(std::vector<Check> &out);
void add_concurrency_race_checks(std::vector<Check> &out);
void add_notify_checks(std::vector<Check> &out);
void add_version_checks(std::vector<Check> &out);
void add_secret_checks(std::vector<Check> &out);

}  // namespace kvblob::conformance
