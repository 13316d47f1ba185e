// Region: one registration the caller holds; unregistered when it goes,
// or kept registered (and its memory with it) when the driver cannot prove
// it let go (R-REG-1, R-REG-2).
#include "kvblob/host/driver.hpp"

#include <utility>

#include "driver_core.hpp"

namespace kvblob {

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
    kvblob_status st = core_->unregister_region(handle_);
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

}  // namespace kvblob
