#include "guarded_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>
#include <thread>

namespace kvblob::conformance {

namespace {
constexpr uint8_t canary_byte = 0xC5;
constexpr size_t canary_min = 64;
size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

GuardedBuffer::GuardedBuffer(size_t size) : size_(size)
{
    const size_t p = page();
    usable_size_ = (size + canary_min + p - 1) / p * p;
    map_size_ = usable_size_ + 2 * p;
    void *m = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    map_ = static_cast<uint8_t *>(m);
    mprotect(map_, p, PROT_NONE);
    mprotect(map_ + p + usable_size_, p, PROT_NONE);
    usable_ = map_ + p;
    data_ = usable_ + usable_size_ - size_;  // the last byte touches the guard page
    std::memset(usable_, canary_byte, usable_size_ - size_);
}

GuardedBuffer::~GuardedBuffer()
{
    if (map_ && !leaked_) munmap(map_, map_size_);
}

bool GuardedBuffer::canary_intact() const
{
    for (const uint8_t *p = usable_; p < data_; ++p)
        if (*p != canary_byte) return false;
    return true;
}

void GuardedBuffer::revoke_for(unsigned grace_ms)
{
    mprotect(usable_, usable_size_, PROT_NONE);
    std::this_thread::sleep_for(std::chrono::milliseconds(grace_ms));
    mprotect(usable_, usable_size_, PROT_READ | PROT_WRITE);
}

}  // namespace kvblob::conformance
