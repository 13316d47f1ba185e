// The full-pool scenario (kvblob.scenarios/1 stage_full_pool) for drivers
// whose store cannot really be filled on demand (process memory, a local
// directory): a flag their puts read, each put DECLINED while it is set,
// until release_staged clears it. A driver derives from StagedFullPool
// beside its base; scenario_glue.hpp finds the inherited hook.
#pragma once

#include <kvblob/kvblob.h>

#include <atomic>

namespace kvblob::support {

class StagedFullPool {
public:
    kvblob_status stage_full_pool()
    {
        pool_full_.store(true);
        return KVBLOB_OK;
    }

protected:
    // Read by every put: DECLINED while true.
    bool pool_full() const { return pool_full_.load(); }
    // From release_staged.
    void release_full_pool() { pool_full_.store(false); }

private:
    std::atomic<bool> pool_full_{false};
};

}  // namespace kvblob::support
