// RAII for a dlopen handle: the LoadedObject (loaded_object/loaded_object.hpp)
// a driver's code lives in. Internal to the host library.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <string>

#include "loaded_object/loaded_object.hpp"

namespace kvblob {

class Library : public LoadedObject {
public:
    // handle came from dlopen("/proc/self/fd/<fd>"): the library keeps fd,
    // the descriptor that was checked, open while the object may be loaded
    // under that name (see loaded_under in plugin_file.hpp). fd is -1 for
    // a library the dynamic linker found by its own search.
    Library(void *handle, int fd) : handle_(handle), fd_(fd) {}
    // Unloads, unless pinned: code of a driver that could not be closed may
    // still run (a worker thread, a late completion), so it stays mapped.
    ~Library();
    void *symbol(const char *name) const { return dlsym(handle_, name); }

    // Empty when [p, p + bytes) lies inside one readable loaded segment of
    // this object's own image; otherwise where p lies instead, in words.
    // Used before the host reads a struct the plugin hands it (R-LOAD-12).
    std::string outside_image(const void *p, size_t bytes) const;

private:
    void *handle_;
    int fd_;
};

}  // namespace kvblob
