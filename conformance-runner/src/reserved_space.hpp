// Address space for a span larger than any buffer the battery could fill:
// reserved, never touched by the battery, so a row over max_object_bytes
// costs nothing until a driver reads or writes it (which a driver that
// refuses the row before copying never does).
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <string>

#include "check.hpp"

namespace kvblob::conformance {

class ReservedSpace {
public:
    explicit ReservedSpace(uint64_t size) : size_(size)
    {
        void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw RunnerCannot("cannot reserve " + std::to_string(size) + " bytes of address space");
        base_ = p;
    }
    ReservedSpace(const ReservedSpace &) = delete;
    ReservedSpace &operator=(const ReservedSpace &) = delete;
    ~ReservedSpace() { munmap(base_, size_); }
    void *data() const { return base_; }
    uint64_t size() const { return size_; }

private:
    void *base_ = nullptr;
    uint64_t size_;
};

}  // namespace kvblob::conformance
