// The shared state behind Driver, Region and Operation. Internal.
//
// Region and Operation objects hold it by shared_ptr, so the driver is shut
// down only when the last of them is gone: an operation can never outlive
// the driver it would have to be released to.
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kvblob/host/driver.hpp"
#include "library.hpp"

namespace kvblob {

class DriverCore {
public:
    DriverCore(std::shared_ptr<Library> library, const kvblob_plugin_t *table, std::string name,
               LogSink sink);
    DriverCore(const DriverCore &) = delete;
    DriverCore &operator=(const DriverCore &) = delete;
    ~DriverCore();

    void adopt(kvblob_driver_t *handle, const kvblob_caps_t &caps);
    void note(kvblob_log_level level, const std::string &message) const;

    // An operation whose owner let go before it could be released.
    void park(kvblob_op_t *op);
    // A region the driver would not unregister yet.
    void pin(kvblob_region_t *region);
    kvblob_status shutdown(std::chrono::nanoseconds timeout);

    // What the host lends the driver at open (kvblob_host_services_t and the
    // log sink behind it). The ABI keeps it valid until close succeeds, so it
    // lives on the heap: a driver that cannot be closed keeps it for good.
    struct Services {
        LogSink sink;
        kvblob_host_services_t table{};
    };
    const kvblob_host_services_t *services() const { return &services_->table; }

    std::shared_ptr<Library> library;
    const kvblob_plugin_t *table;
    std::string name;
    kvblob_driver_t *handle = nullptr;
    kvblob_caps_t caps{};
    const kvblob_scenarios_t *scenarios = nullptr;

private:
    std::unique_ptr<Services> services_;
    std::mutex mu_;
    std::vector<kvblob_op_t *> parked_;
    std::vector<kvblob_region_t *> pinned_;
    bool closed_ = false;
};

}  // namespace kvblob
