#include "cleanup.hpp"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "context.hpp"

namespace kvblob::conformance {

void WriteLog::put(const kvblob_batch_t &batch)
{
    std::lock_guard lock(mu_);
    for (uint64_t i = 0; batch.rows && i < batch.row_count; ++i) {
        const kvblob_row_t &row = batch.rows[i];
        if (!row.key || row.key_len == 0) continue;  // no key a store can hold
        uint64_t total = 0;
        for (uint32_t s = 0; row.spans && s < row.span_count; ++s) total += row.spans[s].length;
        uint64_t &size = keys_[std::string(reinterpret_cast<const char *>(row.key), row.key_len)];
        size = std::max(size, total);
    }
}

void WriteLog::staged(const std::string &key)
{
    std::lock_guard lock(mu_);
    keys_.try_emplace(key, 0);
}

std::map<std::string, uint64_t> WriteLog::take()
{
    std::lock_guard lock(mu_);
    return std::exchange(keys_, {});
}

void Context::wrote(const kvblob_batch_t &batch) const { writes_.put(batch); }

namespace {

// Final with access no longer open, by deadline. Unlike Context::settle,
// judges nothing: the cleanup is no check.
bool settled_by(const Driver &d, kvblob_op_t *op, std::chrono::steady_clock::time_point deadline)
{
    auto pause = std::chrono::microseconds(1);
    for (;;) {
        uint32_t fin = 0;
        d.table().poll(d.handle(), op, &fin);
        if (fin && d.table().access(d.handle(), op) != KVBLOB_ACCESS_OPEN) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
}

std::string counted(uint64_t n, const std::string &what) { return std::to_string(n) + (n == 1 ? " key " : " keys ") + what; }

}  // namespace

Leftover Context::clean_up(std::chrono::steady_clock::time_point deadline) const
{
    const auto written = writes_.take();
    if (written.empty()) return {};
    Leftover left;
    try {
        // A driver of its own, opened once the check's drivers closed: what
        // they staged is released, and the store is as the check left it.
        std::unique_ptr<CheckDriver> d(new CheckDriver(open()));
        const auto &t = d->table();
        const bool remove = d->has(KVBLOB_CAP_REMOVE) && t.remove;
        const bool probe = d->has(KVBLOB_CAP_PROBE) && t.probe;
        if (!remove && !probe) {
            for (const auto &[key, size] : written) ++left.keys, left.bytes += size;
            left.why = "the driver offers neither remove nor probe: every key the check put is counted";
            return left;
        }
        // Keys beyond the declared limit were never stored by a driver that
        // honours it (R-ADM-6).
        std::vector<std::pair<std::string, uint64_t>> keys;
        for (const auto &entry : written)
            if (entry.first.size() <= d->caps().max_key_bytes) keys.push_back(entry);
        const uint64_t chunk = std::clamp<uint64_t>(d->caps().max_rows_per_op, 1, 1024);
        uint64_t held = 0, failed = 0, refused = 0, late = 0, present = 0;
        std::string failed_as, refused_as;
        bool abandoned = false;
        for (size_t first = 0; first < keys.size(); first += chunk) {
            const size_t n = std::min<size_t>(chunk, keys.size() - first);
            auto leave = [&](size_t i, uint64_t &counter) {
                ++left.keys, left.bytes += keys[first + i].second, ++counter;
            };
            Batch b;
            for (size_t i = 0; i < n; ++i) b.row(keys[first + i].first);
            if (abandoned || std::chrono::steady_clock::now() > deadline) {
                for (size_t i = 0; i < n; ++i) leave(i, late);
                continue;
            }
            kvblob_op_t *op = nullptr;
            char err[256] = {0};
            const kvblob_status st = (remove ? t.remove : t.probe)(d->handle(), &b.get(), &op, err, sizeof err);
            if (st != KVBLOB_OK || !op) {
                for (size_t i = 0; i < n; ++i) leave(i, refused);
                err[sizeof err - 1] = '\0';
                if (refused_as.empty()) refused_as = std::string(kvblob_status_name(st)) + " " + err;
                continue;
            }
            if (!settled_by(*d, op, deadline)) {
                for (size_t i = 0; i < n; ++i) leave(i, late);
                abandoned = true;  // the operation is still open: the driver cannot be closed
                continue;
            }
            std::vector<kvblob_row_status_t> res(n, kvblob_row_status_t{sizeof(kvblob_row_status_t), -1, 0, 0});
            if (t.results(d->handle(), op, 0, n, res.data()) != KVBLOB_OK)
                for (auto &r : res) r.result = -1;
            for (size_t i = 0; i < n; ++i) {
                const kvblob_row_result r = res[i].result;
                if (r == KVBLOB_ROW_MISS || (remove && r == KVBLOB_ROW_READY)) continue;  // gone
                if (!remove && (r == KVBLOB_ROW_READY || r == KVBLOB_ROW_NOT_READY)) leave(i, present);
                else if (r == KVBLOB_ROW_NOT_READY) leave(i, held);
                else {
                    leave(i, failed);
                    if (failed_as.empty()) failed_as = r >= 0 ? kvblob_row_result_name(r) : "no valid result";
                }
            }
            t.release(d->handle(), op);
        }
        if (abandoned) (void)d.release();  // left open: closing would wait on an operation that never ends
        std::vector<std::string> why;
        if (!remove)
            why.push_back("the driver offers no remove; probe finds " + std::to_string(present) + " of the " +
                          std::to_string(keys.size()) + " keys the check wrote");
        if (held) why.push_back(counted(held, "NOT_READY to remove: another writer holds them"));
        if (failed) why.push_back(counted(failed, "not removed: " + failed_as));
        if (refused) why.push_back(counted(refused, "not removed: the driver refused the cleanup: " + refused_as));
        if (late) why.push_back(counted(late, "not removed: the check's time ran out"));
        for (size_t i = 0; i < why.size(); ++i) left.why += (i ? "; " : "") + why[i];
        return left;
    } catch (const std::exception &e) {
        return {left.keys, left.bytes, false, std::string("the cleanup failed: ") + e.what()};
    }
}

}  // namespace kvblob::conformance
