// The baseline measured beside a driver in the same run, on the same sizes:
// what the medium itself does without kvblob in the way. memcpy for the
// memory driver (its physical limit: the fastest copy this machine offers,
// copy_methods.hpp), raw pwrite/pread in the same
// directory for the file driver, raw pipelined hiredis SET/GET to the same
// server for the Redis driver, raw batch calls of Mooncake store's C API
// to the same master for the Mooncake driver.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kvblob/host/plugin.hpp"
#include "measure.hpp"

namespace kvblob::bench {

struct Baseline {
    std::string name;
    std::function<bool(BenchOp)> supports;
    std::function<std::unique_ptr<Lane>(const Point &, unsigned lane)> make_lane;
};

// The baseline for a driver opened with options; nullopt (and why) when
// there is none. Rows in device memory have cudaMemcpy as theirs.
// wait: how a baseline that hands its call to a thread of its own waits for
// it (the Mooncake baseline's), as the driver lane waits for its operation.
std::optional<Baseline> baseline_for(const std::string &driver, const Options &options, WaitStyle wait,
                                     std::string &why_none);

// Each baseline, for baseline_for.
struct CopyMethod;
// forced: always that copy method (tests compare them); by default the
// fastest, chosen per point and direction.
Baseline memcpy_baseline(const CopyMethod *forced = nullptr);
Baseline cuda_copy_baseline();  // rows in device memory, whatever the driver
Baseline posix_baseline(const std::string &root, const std::string &fsync);
std::optional<Baseline> hiredis_baseline(const Options &options, std::string &why_none);
Baseline mooncake_baseline(const Options &options, WaitStyle wait);

}  // namespace kvblob::bench
