// The shared-filesystem driver: one file per object under a root directory
// on a local disk or a shared POSIX mount, so that engine processes share
// objects with no server to run.
//
// A put writes the payload and trailer into its O_EXCL claim file beside
// the object (reservation.hpp), which makes other drivers answer NOT_READY
// for the key meanwhile (R-ROW-2), and publishes that very file, whole, by
// its descriptor with a hard link, which refuses to replace an existing
// object: readers never see a partial object (R-CON-2, R-ROW-8) and a
// published one is never rewritten (R-ROW-7).
#pragma once

#include <kvblob/support/queued_driver.hpp>
#include <kvblob/support/staged_full_pool.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layout.hpp"
#include "reservation.hpp"

namespace kvblob::file {

using support::Op;
using support::OpKind;

enum class Sync { none, data, full };

struct Settings {
    std::string root;
    uint64_t capacity = 0;  // 0: no quota
    Sync sync = Sync::none;
    bool direct = false;
    unsigned fanout = 2;
    std::chrono::milliseconds reservation_expiry{30000};
    bool waiter_runs = true;  // where sync is none and not direct
    bool close_reports = true;  // close_may_report(root): a put's flush by close is worth its two calls
};

class FileDriver : public support::QueuedDriver, public support::StagedFullPool {
public:
    static std::unique_ptr<FileDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~FileDriver() override;

    // kvblob.scenarios/1: what a filesystem can stage (and stage_full_pool,
    // from StagedFullPool).
    kvblob_status stage_foreign_writer(const std::string &key);
    kvblob_status stage_failing_read(const std::string &key);
    kvblob_status stage_corrupt(const std::string &key);
    kvblob_status release_staged();

protected:
    void run(Op &op) override;
    void run_row(Op &op, size_t i) override;
    // Rows under 16 KiB four at a time: a row's system calls take about a
    // microsecond, passing the claim counter between cores a tenth of that.
    uint64_t rows_per_claim(const Op &op) const override
    {
        return !op.rows.empty() && op.rows[0].total < 16384 ? 4 : 1;
    }

private:
    FileDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, Settings settings, unsigned workers);

    using Outcome = support::RowOutcome;
    // Bytes counted against the quota before writing, given back unless
    // kept (an object of this driver's own was published).
    class QuotaHold {
    public:
        QuotaHold() = default;
        QuotaHold(std::atomic<uint64_t> &used, uint64_t bytes) : used_(&used), bytes_(bytes) {}
        QuotaHold(QuotaHold &&o) noexcept : used_(std::exchange(o.used_, nullptr)), bytes_(o.bytes_) {}
        QuotaHold &operator=(QuotaHold &&o) noexcept
        {
            std::swap(used_, o.used_);
            std::swap(bytes_, o.bytes_);
            return *this;
        }
        ~QuotaHold()
        {
            if (used_) used_->fetch_sub(bytes_);
        }
        void keep() { used_ = nullptr; }

    private:
        std::atomic<uint64_t> *used_ = nullptr;
        uint64_t bytes_ = 0;
    };
    // A put whose object is written, awaiting its sync and its publication.
    struct StagedPut {
        ObjectPaths paths;
        Reservation reservation;
        uint64_t bytes = 0;
        QuotaHold quota;
    };
    using Row = support::Row;
    void run_puts(Op &op);
    // A put alone: staged, made durable, published.
    Outcome put(const Row &row);
    // Claims and writes row's object: a final outcome, or PENDING with
    // staged set.
    Outcome stage_put(const support::Row &row, std::optional<StagedPut> &staged);
    // 0, or the errno of making put's object durable (the fsync setting).
    int make_durable(StagedPut &put);
    // The row's answer when make_durable failed with err.
    static Outcome not_durable(const StagedPut &put, int err);
    Outcome publish_put(StagedPut &put);
    Outcome get(const support::Row &row);
    Outcome probe(const support::Row &row);
    Outcome remove(const support::Row &row);
    // MISS, or NOT_READY while a writer holds the key.
    Outcome absent(const ObjectPaths &paths) const;
    // Writes row's object (its key's digest given) into the claimed file;
    // 0 or an errno.
    int write_object(const support::Row &row, const support::KeyDigest &digest, Reservation &reservation);
    ObjectPaths paths(const std::string &key) const { return paths_for(settings_.root, settings_.fanout, key); }

    const Settings settings_;
    std::atomic<uint64_t> used_{0};  // bytes this driver knows stored (the quota)

    // Staged scenarios: paths under hooks_mu_; the held gets keep their own.
    std::mutex hooks_mu_;
    std::vector<std::string> planted_reservations_;
    std::vector<std::string> blocked_objects_;  // a directory stands where the object was
};

}  // namespace kvblob::file
