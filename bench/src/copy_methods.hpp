// The ways this machine can copy host memory, and a choice among them by
// measurement. glibc's memcpy is not always the fastest: on some CPUs it
// takes its `rep movsb` path for every size from a few KiB up and runs at a
// fraction of what wide loads and stores reach, and which method wins
// depends on the size, on whether the rows fit in cache and on the
// direction. A memcpy baseline that is to stand for the medium's limit is
// the fastest of them, measured on the very buffers and rows it will copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvblob::bench {

using CopyFn = void (*)(uint8_t *dst, const uint8_t *src, size_t n);

struct CopyMethod {
    const char *name;
    CopyFn copy;
};

// The methods this CPU runs (checked once at run time): glibc memcpy,
// rep movsb, and loops of SSE2, AVX2 and AVX-512 loads and stores, the wide
// ones also with non-temporal stores.
const std::vector<CopyMethod> &copy_methods();
// The method of that name; nullptr when this CPU has none by that name.
const CopyMethod *copy_method(const std::string &name);

// rows rows of size bytes each, row r at r * size in both buffers: one
// batch as a lane copies it.
struct CopyJob {
    uint8_t *dst;
    const uint8_t *src;
    uint64_t size;
    uint64_t rows;
};
void copy_rows(const CopyMethod &method, const CopyJob &job);

// Each method's throughput on job, in 1e9 bytes per second: the best of a
// few rounds, the methods taking turns in each round so that a noisy
// moment does not favour one of them.
struct CopyTiming {
    const CopyMethod *method;
    double gbps;
};
std::vector<CopyTiming> time_copy_methods(const CopyJob &job, unsigned rounds = 3);
// The fastest of time_copy_methods(job).
const CopyMethod &fastest_copy(const CopyJob &job);

// Where p starts within its page.
unsigned page_offset(const void *p);
// "to/from page offset 0/0": where dst and src start within their pages.
std::string alignment_of(const void *dst, const void *src);

}  // namespace kvblob::bench
