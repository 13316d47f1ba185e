// The object file a driver's code lives in, as what opens it (loading/,
// Library) and what runs the driver (guarding/, DriverCore) both need it:
// kept loaded while anything may still call into it, and pinned, for the
// life of the process, where something may call into it after its owner is
// gone (a drain that never returned, a driver that could not be closed).
// It sits below both rooms, so neither includes the other's insides for it.
// Internal to the host library.
#pragma once

#include <atomic>

namespace kvblob {

class LoadedObject {
public:
    LoadedObject(const LoadedObject &) = delete;
    LoadedObject &operator=(const LoadedObject &) = delete;
    // The object stays mapped for the life of the process: its owner's
    // destructor does not unload it.
    void pin() noexcept { pinned_.store(true); }
    bool pinned() const noexcept { return pinned_.load(); }

protected:
    LoadedObject() = default;
    ~LoadedObject() = default;  // destroyed as what opened it (Library)

private:
    std::atomic<bool> pinned_{false};
};

}  // namespace kvblob
