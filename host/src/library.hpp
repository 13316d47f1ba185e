// RAII for a dlopen handle. Internal to the host library.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <string>

namespace kvblob {

class Library {
public:
    explicit Library(void *handle) : handle_(handle) {}
    Library(const Library &) = delete;
    Library &operator=(const Library &) = delete;
    // Unloads, unless pinned: code of a driver that could not be closed may
    // still run (a worker thread, a late completion), so it stays mapped.
    ~Library()
    {
        if (handle_ && !pinned_.load()) dlclose(handle_);
    }
    void *symbol(const char *name) const { return dlsym(handle_, name); }
    void pin() noexcept { pinned_.store(true); }

private:
    void *handle_;
    std::atomic<bool> pinned_{false};
};

}  // namespace kvblob
