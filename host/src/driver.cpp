#include "kvblob/host/driver.hpp"

#include <cstdio>
#include <thread>
#include <utility>

#include "driver_core.hpp"

namespace kvblob {

namespace {

// The C callback a driver logs through; never lets an exception cross back.
void log_trampoline(void *context, kvblob_log_level level, const char *message)
{
    try {
        const auto &sink = *static_cast<const LogSink *>(context);
        if (sink) sink(level, message ? message : "(null)");
    } catch (...) {
    }
}

const char *level_name(kvblob_log_level level)
{
    switch (level) {
    case KVBLOB_LOG_DEBUG: return "debug";
    case KVBLOB_LOG_INFO: return "info";
    case KVBLOB_LOG_WARN: return "warning";
    case KVBLOB_LOG_ERROR: return "error";
    case KVBLOB_LOG_MISBEHAVING: return "driver misbehaving";
    default: return "log";
    }
}

constexpr auto default_shutdown_timeout = std::chrono::seconds(10);

}  // namespace

LogSink stderr_log_sink(const std::string &driver_name)
{
    return [driver_name](kvblob_log_level level, const std::string &message) {
        if (level >= KVBLOB_LOG_WARN)
            std::fprintf(stderr, "kvblob[%s] %s: %s\n", driver_name.c_str(), level_name(level),
                         message.c_str());
    };
}

const char *to_string(OpKind kind)
{
    switch (kind) {
    case OpKind::put: return "put";
    case OpKind::get: return "get";
    case OpKind::probe: return "probe";
    case OpKind::remove: return "remove";
    }
    return "?";
}

CallError::CallError(kvblob_status status, std::string rule, const std::string &message)
    : std::runtime_error("[" + rule + "] " + message + " (" + kvblob_status_name(status) + ")"),
      status_(status),
      rule_(std::move(rule))
{
}

// ---- DriverCore -----------------------------------------------------------

DriverCore::DriverCore(std::shared_ptr<Library> lib, const kvblob_plugin_t *t, std::string n, LogSink s)
    : library(std::move(lib)), table(t), name(std::move(n)), services_(std::make_unique<Services>())
{
    services_->sink = std::move(s);
    services_->table.struct_size = sizeof services_->table;
    services_->table.context = &services_->sink;
    services_->table.log = &log_trampoline;
}

DriverCore::~DriverCore()
{
    if (handle) shutdown(default_shutdown_timeout);
    // A driver still open may log through what it was lent at open: keep it.
    if (handle) (void)services_.release();
}

void DriverCore::adopt(kvblob_driver_t *h, const kvblob_caps_t &c)
{
    handle = h;
    caps = c;
    if (table->get_extension)
        scenarios = static_cast<const kvblob_scenarios_t *>(table->get_extension(h, KVBLOB_EXT_SCENARIOS));
    if (scenarios && scenarios->struct_size < sizeof(uint32_t) * 2) scenarios = nullptr;
}

void DriverCore::note(kvblob_log_level level, const std::string &message) const
{
    if (services_->sink) services_->sink(level, message);
}

void DriverCore::park(kvblob_op_t *op)
{
    std::lock_guard lock(mu_);
    parked_.push_back(op);
}

void DriverCore::pin(kvblob_region_t *region)
{
    std::lock_guard lock(mu_);
    pinned_.push_back(region);
}

kvblob_status DriverCore::shutdown(std::chrono::nanoseconds timeout)
{
    std::lock_guard lock(mu_);
    if (closed_ || !handle) return KVBLOB_OK;
    kvblob_status st = table->drain(handle, static_cast<uint64_t>(timeout.count()));
    std::erase_if(parked_, [&](kvblob_op_t *op) { return table->release(handle, op) == KVBLOB_OK; });
    std::erase_if(pinned_, [&](kvblob_region_t *r) { return table->unregister_region(handle, r) == KVBLOB_OK; });
    // Close only when nothing is left that the driver may still touch.
    if (st == KVBLOB_OK) st = parked_.empty() && pinned_.empty() ? table->close(handle) : KVBLOB_E_BUSY;
    if (st != KVBLOB_OK) {
        // Something may still touch memory: keep the driver open and its code
        // mapped for the life of the process rather than free anything.
        library->pin();
        note(KVBLOB_LOG_WARN, std::string("could not close (") + kvblob_status_name(st) + "): " +
                                  std::to_string(parked_.size()) + " operation(s) and " +
                                  std::to_string(pinned_.size()) +
                                  " region(s) stay alive for the life of the process");
        return st;
    }
    closed_ = true;
    handle = nullptr;
    return KVBLOB_OK;
}

// ---- Region ---------------------------------------------------------------

Region::Region(std::shared_ptr<DriverCore> core, kvblob_region_t *handle)
    : core_(std::move(core)), handle_(handle)
{
}
Region::Region(Region &&o) noexcept : core_(std::move(o.core_)), handle_(std::exchange(o.handle_, nullptr)) {}
Region &Region::operator=(Region &&o) noexcept
{
    if (this != &o) {
        Region old(std::move(*this));  // unregisters what this held
        core_ = std::move(o.core_);
        handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
}

kvblob_status Region::unregister()
{
    if (!handle_) return KVBLOB_OK;
    kvblob_status st = core_->table->unregister_region(core_->handle, handle_);
    if (st == KVBLOB_OK) handle_ = nullptr;
    return st;
}

Region::~Region()
{
    if (!handle_) return;
    kvblob_status st = unregister();
    if (st != KVBLOB_OK) {
        core_->note(KVBLOB_LOG_WARN, std::string("region kept registered (") + kvblob_status_name(st) +
                                         "): its memory must stay alive" +
                                         (st == KVBLOB_E_UNPROVABLE ? " for the life of the process (R-REG-2)"
                                                                    : " until the driver shuts down (R-REG-1)"));
        core_->pin(handle_);
    }
}

// ---- Operation ------------------------------------------------------------

Operation::Operation(std::shared_ptr<DriverCore> core, kvblob_op_t *handle, uint64_t rows)
    : core_(std::move(core)), handle_(handle), rows_(rows)
{
}
Operation::Operation(Operation &&o) noexcept
    : core_(std::move(o.core_)), handle_(std::exchange(o.handle_, nullptr)), rows_(o.rows_)
{
}
Operation &Operation::operator=(Operation &&o) noexcept
{
    if (this != &o) {
        abandon();
        core_ = std::move(o.core_);
        handle_ = std::exchange(o.handle_, nullptr);
        rows_ = o.rows_;
    }
    return *this;
}
Operation::~Operation() { abandon(); }

kvblob_status Operation::release()
{
    if (!handle_) return KVBLOB_E_INVALID;
    kvblob_status st = core_->table->release(core_->handle, handle_);
    if (st == KVBLOB_OK) handle_ = nullptr;
    return st;
}

void Operation::abandon() noexcept
{
    if (!handle_) return;
    kvblob_status st = release();
    if (st == KVBLOB_E_BUSY) {
        // Not final or access still open: stop what has not started and let
        // the driver object release it after its drain (R-OPS-1).
        core_->table->cancel(core_->handle, handle_);
        st = release();
    }
    // Still busy, or unprovable (kept for good): the driver object holds it.
    if (st == KVBLOB_E_BUSY || st == KVBLOB_E_UNPROVABLE) core_->park(handle_);
    handle_ = nullptr;
}

bool Operation::is_final() const
{
    uint32_t fin = 0;
    return core_->table->poll(core_->handle, handle_, &fin) == KVBLOB_OK && fin != 0;
}

kvblob_access Operation::access() const { return core_->table->access(core_->handle, handle_); }

bool Operation::wait(std::chrono::milliseconds timeout) const
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(1);
    while (!(is_final() && access() != KVBLOB_ACCESS_OPEN)) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    return true;
}

std::vector<RowStatus> Operation::results() const
{
    std::vector<kvblob_row_status_t> raw(rows_);
    for (auto &r : raw) r.struct_size = sizeof r;
    std::vector<RowStatus> out(rows_);
    if (rows_ && core_->table->results(core_->handle, handle_, 0, rows_, raw.data()) == KVBLOB_OK)
        for (uint64_t i = 0; i < rows_; ++i) out[i] = {raw[i].result, raw[i].driver_code};
    return out;
}

std::string Operation::message(uint64_t row) const
{
    char buf[512];
    buf[0] = '\0';
    core_->table->row_message(core_->handle, handle_, row, buf, sizeof buf);
    buf[sizeof buf - 1] = '\0';
    return buf;
}

kvblob_status Operation::cancel() const { return core_->table->cancel(core_->handle, handle_); }

// ---- Driver ---------------------------------------------------------------

Driver::~Driver() = default;

const kvblob_plugin_t &Driver::table() const noexcept { return *core_->table; }
kvblob_driver_t *Driver::handle() const noexcept { return core_->handle; }
const kvblob_caps_t &Driver::caps() const noexcept { return core_->caps; }
const kvblob_scenarios_t *Driver::scenarios() const noexcept { return core_->scenarios; }
const std::string &Driver::name() const noexcept { return core_->name; }

Region Driver::register_region(const kvblob_region_desc_t &desc)
{
    char err[512] = {0};
    kvblob_region_t *handle = nullptr;
    kvblob_status st = core_->table->register_region(core_->handle, &desc, &handle, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != KVBLOB_OK || !handle)
        throw CallError(st, desc.kind == KVBLOB_MEMORY_DEVICE ? "R-ADM-8" : "R-REG-1",
                        "register_region refused: " + std::string(err));
    return Region(core_, handle);
}

Operation Driver::submit(OpKind kind, const kvblob_batch_t &batch)
{
    const auto &t = *core_->table;
    decltype(t.put) slot = nullptr;
    switch (kind) {
    case OpKind::put: slot = t.put; break;
    case OpKind::get: slot = t.get; break;
    case OpKind::probe: slot = has(KVBLOB_CAP_PROBE) ? t.probe : nullptr; break;
    case OpKind::remove: slot = has(KVBLOB_CAP_REMOVE) ? t.remove : nullptr; break;
    }
    if (!slot) throw CallError(KVBLOB_E_UNSUPPORTED, "R-CAP-1", std::string(to_string(kind)) + " is not declared");
    char err[512] = {0};
    kvblob_op_t *op = nullptr;
    kvblob_status st = slot(core_->handle, &batch, &op, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != KVBLOB_OK || !op)
        throw CallError(st, "R-ADM-1", std::string(to_string(kind)) + " refused: " + err);
    return Operation(core_, op, batch.row_count);
}

kvblob_status Driver::drain(std::chrono::nanoseconds timeout)
{
    return core_->table->drain(core_->handle, static_cast<uint64_t>(timeout.count()));
}

kvblob_status Driver::shutdown(std::chrono::nanoseconds timeout)
{
    if (core_.use_count() > 1) {
        core_->note(KVBLOB_LOG_WARN, "shutdown deferred: regions or operations are still held by the caller");
        return KVBLOB_E_BUSY;
    }
    return core_->shutdown(timeout);
}

}  // namespace kvblob
