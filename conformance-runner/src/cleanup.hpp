// The battery cleans up after itself: a check's store must not fill up run
// after run. Every key a check had a put admitted for, and every key it
// staged a scenario on, is noted here (Context::submit, Context::stage);
// once the check's drivers closed, Context::clean_up removes them through
// the driver's own remove slot, or, where the driver offers none, counts
// what is still there (with probe) or what was written (without).
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace kvblob::conformance {

class WriteLog {
public:
    // The keys of an admitted put, each with the size of its object.
    void put(const kvblob_batch_t &batch);
    // A key a scenario was staged on (a foreign writer's claim, say).
    void staged(const std::string &key);
    // Every key noted, with the largest object put under it; emptied.
    std::map<std::string, uint64_t> take();

private:
    std::mutex mu_;
    std::map<std::string, uint64_t> keys_;
};

}  // namespace kvblob::conformance
