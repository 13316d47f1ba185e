// The tiered driver: a stack of drivers loaded through the host library
// (kvblob::Plugin), top first, offered as one driver. See README.md here for
// its semantics and docs/contract.md, "Composed stores".
//
// Each admitted operation runs on one of this driver's worker threads,
// which submits to the tiers in turn and waits for each tier operation to be
// final and its access ended (Operation::wait) before it reads the next.
// The tiered operation's access ends only after every tier operation under
// it (the promotion puts of a get included) ended its access and was
// released; a tier operation whose access became unprovable makes the
// tiered operation's access unprovable too.
#pragma once

#include <kvblob/host/plugin.hpp>
#include <kvblob/support/driver_base.hpp>
#include <kvblob/support/work_queue.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvblob::tiered {

using support::Op;

// A row's answer from one tier, or the tiered driver's own for a tier that
// refused the whole operation (refused: nothing of the row's was touched).
struct TierAnswer {
    kvblob_row_result result = KVBLOB_ROW_PENDING;
    int32_t code = 0;
    std::string message;
    bool refused = false;
};

struct TieredOp : Op {
    // The tier operations a cancel is forwarded to, under mu.
    std::mutex mu;
    std::vector<const kvblob::Operation *> cancellable;
    void recycle() override
    {
        cancellable.clear();
        Op::recycle();
    }
};

// Where log lines of the tiers go: this driver's own host log service while
// the driver lives (a tier's late line after close is dropped).
struct LogForward {
    std::mutex mu;
    kvblob_host_services_t host{};
    bool open = true;
    void line(size_t tier, const std::string &driver, kvblob_log_level level, const std::string &text);
};

struct Tier {
    size_t index = 0;
    std::string driver;                // the name it was given (tier.N.driver)
    std::optional<kvblob::Plugin> plugin;
    std::optional<kvblob::Driver> handle;
    std::vector<std::string> secrets;  // what the host scrubs; this driver scrubs row messages too
    std::string label() const { return "tier " + std::to_string(index) + " (" + driver + ")"; }
};

class TieredDriver : public support::DriverBase {
public:
    static std::unique_ptr<TieredDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~TieredDriver() override;

    // The unregister_region slot: every tier's registration first, BUSY
    // when any tier refuses (its registration, and the memory, stay).
    kvblob_status unregister_everywhere(kvblob_region_t *region);

protected:
    std::unique_ptr<Op> make_op() override { return std::make_unique<TieredOp>(); }
    void start(Op &op) override;
    void on_cancel(Op &op) override;
    void stop() override;
    kvblob_status store_register(support::Region &region, std::string &why) override;
    void store_unregister(support::Region &region) override;

private:
    TieredDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, std::vector<Tier> tiers,
                 std::shared_ptr<LogForward> forward, unsigned workers);

    void run(TieredOp &op);
    void run_get(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    void run_put(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    void run_probe(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    void run_remove(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    void promote(TieredOp &op, const std::vector<size_t> &rows, const std::vector<int> &ready_tier);
    // Submits rows of op to tier t as kind, waits until the tier operation
    // is final and its access ended, and answers each row (in rows' order).
    // cancellable: a cancel of op is forwarded to it.
    std::vector<TierAnswer> ask(TieredOp &op, size_t t, kvblob::OpKind kind, const std::vector<size_t> &rows,
                                bool cancellable);

    std::vector<Tier> tiers_;
    std::shared_ptr<LogForward> forward_;

    // Each registered region's registrations with the tiers, by tier.
    std::mutex regions_mu_;
    std::unordered_map<const kvblob_region_t *, std::vector<kvblob::Region>> tier_regions_;

    support::WorkQueue workers_;
};

}  // namespace kvblob::tiered
