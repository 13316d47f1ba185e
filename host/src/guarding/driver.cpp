// Driver: an open driver as the caller holds it; everything it does goes
// through its DriverCore (driver_core.hpp), which Regions and Operations
// share.
#include "kvblob/host/driver.hpp"

#include "driver_core.hpp"

namespace kvblob {

Driver::~Driver() = default;

const kvblob_plugin_t &Driver::table() const noexcept { return *core_->table; }
kvblob_driver_t *Driver::handle() const noexcept { return core_->handle; }
const kvblob_caps_t &Driver::caps() const noexcept { return core_->caps; }
const kvblob_scenarios_t *Driver::scenarios() const noexcept { return core_->scenarios; }
const std::string &Driver::name() const noexcept { return core_->name; }
MetricsSnapshot Driver::metrics() const { return core_->metrics_snapshot(); }
int Driver::completion_fd() const noexcept
{
    if (!core_->notifies()) return -1;
    return core_->notifier().fd();
}

Region Driver::register_region(const kvblob_region_desc_t &desc) { return Region(core_, core_->register_region(desc)); }

Operation Driver::submit(OpKind kind, const kvblob_batch_t &batch)
{
    return submit(kind, batch, Vouch::nothing);
}

Operation Driver::submit(OpKind kind, const kvblob_batch_t &batch, Vouch vouched)
{
    return Operation(core_, core_->submit(kind, batch, vouched), batch.row_count);
}

kvblob_status Driver::drain(std::chrono::nanoseconds timeout)
{
    const kvblob_status st = core_->bounded_drain(timeout);
    core_->flush_thrown();
    return st;
}

kvblob_status Driver::shutdown(std::chrono::nanoseconds timeout)
{
    if (core_.use_count() > 1) {
        core_->note(KVBLOB_LOG_WARN, "shutdown deferred: regions or operations are still held by the caller");
        core_->defer_shutdown(timeout);
        return KVBLOB_E_BUSY;
    }
    return core_->shutdown(timeout);
}

}  // namespace kvblob
