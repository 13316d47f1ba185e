// The held-get scenario (kvblob.scenarios/1 stage_held_get) for drivers
// whose store cannot hold a read itself: gets naming a staged key are parked
// (not final, access open) until release, and must delay no other operation
// (R-CON-3). A parked get has not started (docs/contract.md, "Scenario
// hooks"): cancel takes it out and makes its rows CANCELLED (R-CAN-1).
#pragma once

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kvblob/support/driver_base.hpp"

namespace kvblob::support {

class HeldGets {
public:
    void stage(const std::string &key)
    {
        std::lock_guard lock(mu_);
        keys_.insert(key);
        any_.store(true, std::memory_order_release);
    }
    // Parks op when it is a get naming a staged key; true when parked.
    bool park(Op &op)
    {
        if (op.kind != OpKind::get || !any_.load(std::memory_order_acquire)) return false;
        std::lock_guard lock(mu_);
        for (const auto &row : op.rows)
            if (keys_.count(row.key)) {
                parked_.push_back(&op);
                return true;
            }
        return false;
    }
    // Takes op out when it is parked (a cancel before it started); true when
    // it was: the caller then cancels it whole.
    bool take(Op &op)
    {
        std::lock_guard lock(mu_);
        auto it = std::find(parked_.begin(), parked_.end(), &op);
        if (it == parked_.end()) return false;
        parked_.erase(it);
        return true;
    }
    // Forgets the staged keys; returns the parked operations, to run now.
    std::vector<Op *> release()
    {
        std::lock_guard lock(mu_);
        keys_.clear();
        any_.store(false, std::memory_order_release);
        return std::exchange(parked_, {});
    }

private:
    std::mutex mu_;
    std::set<std::string> keys_;
    std::vector<Op *> parked_;
    std::atomic<bool> any_{false};
};

}  // namespace kvblob::support
