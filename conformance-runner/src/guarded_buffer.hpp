// Caller memory the battery hands a driver: the bytes end against PROT_NONE
// guard pages (trailing_guard_pages of them) and start after a canary and
// one guard page, so a write outside a span
// is caught; after a driver says access ended, the bytes can be made
// inaccessible for a grace period, so a late touch is caught (R-REG-3).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvblob::conformance {

// A write that runs on past a span crosses these before it could reach
// memory that is not the buffer's (lift_guard opens them one at a time).
inline constexpr size_t trailing_guard_pages = 4;

class GuardedBuffer {
public:
    explicit GuardedBuffer(size_t size);
    GuardedBuffer(const GuardedBuffer &) = delete;
    GuardedBuffer &operator=(const GuardedBuffer &) = delete;
    // Unmaps, unless the check is failing (an exception is unwinding past
    // it): then an operation the driver admitted may still be using the
    // memory, and it stays mapped for the life of the process.
    ~GuardedBuffer();

    uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    // The canary before the data is intact.
    bool canary_intact() const;
    // Makes the data inaccessible for grace_ms, then accessible again.
    void revoke_for(unsigned grace_ms);
    // Never unmapped: a driver whose access was never proven may still
    // touch it (the battery says so where it happens).
    void leak() { leaked_ = true; }

private:
    uint8_t *map_ = nullptr;
    size_t map_size_ = 0;
    uint8_t *usable_ = nullptr;
    size_t usable_size_ = 0;
    uint8_t *data_ = nullptr;
    size_t size_ = 0;
    bool leaked_ = false;
    int exceptions_at_birth_ = 0;
};

// Whether addr lies in the mapping of a live GuardedBuffer (its guard pages
// included). Async-signal-safe: the fault handler asks it.
bool is_guarded_address(const void *addr);
// The bounds of that mapping, [*start, *end); false when addr is in none.
// Async-signal-safe.
bool guarded_mapping_of(const void *addr, uintptr_t *start, uintptr_t *end);
// Makes the page holding addr readable and writable, so that a driver that
// touched it goes on and the check (and its cleanup) ends as it would: the
// fault is already noted, and fails the check. Never the mapping's first or
// last page: past those lies memory that is not the battery's, so a touch
// that reaches them still ends the process. False when it lifted nothing.
// Async-signal-safe.
bool lift_guard(const void *addr);

}  // namespace kvblob::conformance
