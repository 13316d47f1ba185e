#include "guarded_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <thread>

namespace kvblob::conformance {

namespace {

// Every live mapping, readable from a signal handler: slots are claimed with
// a compare-and-swap on their start and emptied by storing zero.
struct Mapping {
    std::atomic<uintptr_t> start{0};
    std::atomic<uintptr_t> end{0};
};
constexpr size_t max_mappings = 65536;
Mapping mappings[max_mappings];

void remember(uint8_t *map, size_t size)
{
    const auto start = reinterpret_cast<uintptr_t>(map);
    for (auto &m : mappings) {
        uintptr_t empty = 0;
        if (m.start.compare_exchange_strong(empty, start)) {
            m.end.store(start + size);
            return;
        }
    }
}

void forget(uint8_t *map)
{
    const auto start = reinterpret_cast<uintptr_t>(map);
    for (auto &m : mappings)
        if (m.start.load() == start) {
            m.end.store(0);
            m.start.store(0);
            return;
        }
}

constexpr uint8_t canary_byte = 0xC5;
constexpr size_t canary_min = 64;
size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

GuardedBuffer::GuardedBuffer(size_t size) : size_(size), exceptions_at_birth_(std::uncaught_exceptions())
{
    const size_t p = page();
    usable_size_ = (size + canary_min + p - 1) / p * p;
    map_size_ = usable_size_ + (1 + trailing_guard_pages) * p;
    void *m = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    map_ = static_cast<uint8_t *>(m);
    mprotect(map_, p, PROT_NONE);
    mprotect(map_ + p + usable_size_, trailing_guard_pages * p, PROT_NONE);
    usable_ = map_ + p;
    data_ = usable_ + usable_size_ - size_;  // the last byte touches the guard page
    std::memset(usable_, canary_byte, usable_size_ - size_);
    remember(map_, map_size_);
}

bool guarded_mapping_of(const void *addr, uintptr_t *start, uintptr_t *end)
{
    const auto a = reinterpret_cast<uintptr_t>(addr);
    for (const auto &m : mappings) {
        const uintptr_t s = m.start.load(std::memory_order_relaxed), e = m.end.load(std::memory_order_relaxed);
        if (s && a >= s && a < e) {
            *start = s, *end = e;
            return true;
        }
    }
    return false;
}

bool is_guarded_address(const void *addr)
{
    uintptr_t start = 0, end = 0;
    return guarded_mapping_of(addr, &start, &end);
}

bool lift_guard(const void *addr)
{
    uintptr_t start = 0, end = 0;
    if (!guarded_mapping_of(addr, &start, &end)) return false;
    const uintptr_t p = page(), at = reinterpret_cast<uintptr_t>(addr) / p * p;
    if (at <= start || at + p >= end) return false;
    return mprotect(reinterpret_cast<void *>(at), p, PROT_READ | PROT_WRITE) == 0;
}

GuardedBuffer::~GuardedBuffer()
{
    if (std::uncaught_exceptions() > exceptions_at_birth_) leaked_ = true;
    if (map_ && !leaked_) {
        forget(map_);
        munmap(map_, map_size_);
    }
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
