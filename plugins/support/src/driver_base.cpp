// DriverBase's life: construction and the services lent, regions (R-REG-*),
// drain (R-DRN-*) and close (R-CLS-1). Admission is in admission.cpp, an
// operation's answers and their announcements in answers.cpp.
#include "kvblob/support/driver_base.hpp"

#include "kvblob/support/crc32c.hpp"
#include "refused.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>

namespace kvblob::support {

DriverBase::DriverBase(const kvblob_caps_t &caps, const kvblob_host_services_t *host) : caps_(caps)
{
    // Copy what the host's record covers: a 1.0 host lends a shorter one,
    // and the members it lacks stay zero (no notify).
    if (host && host->struct_size >= KVBLOB_HOST_SERVICES_SIZE_1_0)
        std::memcpy(&host_, host, std::min<size_t>(host->struct_size, sizeof host_));
    host_.struct_size = sizeof host_;
    // Which CRC32C path runs at which size is timed once per process (a
    // budget of 2 ms, crc32c_choice): here, at open, rather than in the
    // first row a driver stores.
    crc32c_choice();
}

DriverBase::~DriverBase() = default;

void DriverBase::offer_notify(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    // Only where the negotiated version lays notify out and the host lent
    // one (the constructor copied no member past a 1.0 record): a 1.0 host
    // sees no 1.1 bit and is polled.
    constexpr size_t covers_notify = offsetof(kvblob_host_services_t, notify) + sizeof(kvblob_host_services_t::notify);
    if (args.abi_version < KVBLOB_ABI_1_1 || !args.host || args.host->struct_size < covers_notify || !host_.notify)
        return;
    notifies_ = true;
    caps.flags |= KVBLOB_CAP_NOTIFY;
    caps_.flags |= KVBLOB_CAP_NOTIFY;
}

void DriverBase::log(kvblob_log_level level, const std::string &message) const
{
    if (host_.log) host_.log(host_.context, level, message.c_str());
}

const void *DriverBase::extension(const char *) { return nullptr; }
std::unique_ptr<Op> DriverBase::make_op() { return std::make_unique<Op>(); }
void DriverBase::on_cancel(Op &) {}

void Op::recycle()
{
    regions.clear();
    hint.clear();
    state.store(0, std::memory_order_relaxed);
    cancel_requested.store(false, std::memory_order_relaxed);
    announcing.store(0, std::memory_order_relaxed);
    unprovable = false;
    queued.store(false, std::memory_order_relaxed);
    share.reset();
}

// ---- released operations kept for reuse ----------------------------------

namespace {

// An operation of more rows than this goes when released: a spare's rows
// keep their memory for as long as the driver is open.
constexpr size_t max_spare_rows = 4096;

}  // namespace

DriverBase::OpTable::node_type DriverBase::take_spare_op()
{
    OpTable::node_type spare;
    {
        std::lock_guard lock(ops_mu_);
        if (spare_ops_.empty()) return spare;
        spare = std::move(spare_ops_.back());
        spare_ops_.pop_back();
    }
    spare.mapped()->recycle();
    return spare;
}

// Called under ops_mu_ (release).
void DriverBase::keep_spare_op(OpTable::node_type released)
{
    if (spare_ops_.size() >= max_spare_ops || released.mapped()->rows.capacity() > max_spare_rows) return;
    try {
        spare_ops_.push_back(std::move(released));
    } catch (const std::bad_alloc &) {  // not kept: freed with released; the release itself succeeded
    }
}

// ---- regions --------------------------------------------------------------

kvblob_status DriverBase::register_region(const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                          std::string &why)
{
    if (out) *out = nullptr;
    if (!desc || !out || desc->struct_size < sizeof(kvblob_region_desc_t))
        return refused(why, KVBLOB_E_INVALID, "register_region: NULL or undersized descriptor");
    if (draining_) return refused(why, KVBLOB_E_CLOSED, "[R-ADM-2] the driver is draining");
    if (!desc->base || desc->size == 0)
        return refused(why, KVBLOB_E_REJECTED, "[R-REG-1] a region needs a base address and a positive size");
    if (desc->kind == KVBLOB_MEMORY_DEVICE && !(caps_.flags & KVBLOB_CAP_DEVICE_MEMORY))
        return refused(why, KVBLOB_E_REJECTED,
                       "[R-ADM-8] DEVICE memory, but this driver does not declare device_memory");
    if (desc->kind != KVBLOB_MEMORY_HOST && desc->kind != KVBLOB_MEMORY_DEVICE)
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-8] unknown memory kind " + std::to_string(desc->kind));
    if (reinterpret_cast<uintptr_t>(desc->base) + desc->size < reinterpret_cast<uintptr_t>(desc->base))
        return refused(why, KVBLOB_E_REJECTED, "[R-REG-1] region wraps around the address space");
    auto region = std::make_unique<Region>();
    region->base = static_cast<uint8_t *>(desc->base);
    region->size = desc->size;
    region->kind = desc->kind;
    region->device_ordinal = desc->device_ordinal;
    if (kvblob_status st = store_register(*region, why); st != KVBLOB_OK) return st;
    Region *raw = region.get();
    std::unique_lock lock(regions_mu_);
    regions_.emplace(raw, std::move(region));
    *out = raw;
    return KVBLOB_OK;
}

kvblob_status DriverBase::unregister_region(kvblob_region_t *handle)
{
    std::unique_lock lock(regions_mu_);
    auto it = regions_.find(handle);
    if (it == regions_.end()) return KVBLOB_E_INVALID;
    if (it->second->pinned) return KVBLOB_E_UNPROVABLE;         // R-REG-2
    if (it->second->users.load() != 0) return KVBLOB_E_BUSY;  // R-REG-1
    // Out of the table first: no operation can name it any more, and none
    // still does (users is 0), so the store's side is undone unlocked.
    std::unique_ptr<Region> gone = std::move(it->second);
    regions_.erase(it);
    lock.unlock();
    store_unregister(*gone);
    return KVBLOB_OK;
}

// ---- drain and close ------------------------------------------------------

kvblob_status DriverBase::drain(uint64_t timeout_ns)
{
    draining_.store(true);
    if (any_unprovable_.load()) return KVBLOB_E_UNPROVABLE;  // R-DRN-2
    std::unique_lock lock(drain_mu_);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t(1) << 62));
    auto idle = [&] {
        return any_unprovable_.load() || (calls_in_progress_.load() == 0 && in_flight_.load() == 0);
    };
    const bool done = drain_cv_.wait_until(lock, deadline, idle);
    if (any_unprovable_.load()) return KVBLOB_E_UNPROVABLE;
    if (!done) return KVBLOB_E_TIMEOUT;
    drained_ok_.store(true);
    return KVBLOB_OK;
}

kvblob_status DriverBase::can_close()
{
    if (!drained_ok_.load()) return KVBLOB_E_BUSY;  // R-CLS-1
    {
        std::shared_lock lock(regions_mu_);
        if (!regions_.empty()) return KVBLOB_E_BUSY;
    }
    stop();
    return KVBLOB_OK;
}

}  // namespace kvblob::support
