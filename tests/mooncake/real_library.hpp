// What a test shim in front of Mooncake's libmooncake_store.so shares
// (refusing_shim.cpp, staging_shim.cpp): the real library, named by
// KVBLOB_MOONCAKE_REAL_LIBRARY, loaded once, and its functions by name.
// Header only: each shim is a library of its own.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace kvblob::test::mooncake {

// The real library's handle, or null (said once on stderr, naming shim)
// when the variable is unset or the library cannot be loaded.
inline void *real_library(const char *shim)
{
    static void *handle = [shim] {
        const char *path = std::getenv("KVBLOB_MOONCAKE_REAL_LIBRARY");
        void *h = path ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
        if (!h) std::fprintf(stderr, "%s: cannot load KVBLOB_MOONCAKE_REAL_LIBRARY: %s\n", shim, ::dlerror());
        return h;
    }();
    return handle;
}

// The real library's function name as an F, or null.
template <class F>
F real_function(const char *shim, const char *name)
{
    void *h = real_library(shim);
    return h ? reinterpret_cast<F>(::dlsym(h, name)) : nullptr;
}

}  // namespace kvblob::test::mooncake
