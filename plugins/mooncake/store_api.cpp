#include "store_api.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace kvblob::mooncake {

namespace {

template <class F>
void resolve(void *handle, const std::string &library, const char *symbol, F &slot, bool required)
{
    void *p = ::dlsym(handle, symbol);
    if (!p && required)
        throw std::runtime_error(library + " has no symbol " + symbol + " (is it Mooncake store's C library?)");
    slot = reinterpret_cast<F>(p);
}

}  // namespace

StoreLibrary::StoreLibrary(const std::string &path)
{
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char *why = ::dlerror();
        throw std::runtime_error("cannot load Mooncake store's library '" + path + "' (option 'library'): " +
                                 (why ? why : "unknown error"));
    }
    try {
        resolve(handle_, path, "kvblob_mooncake_source_version", api_.source_version, false);
        const char *found = api_.source_version ? api_.source_version() : nullptr;
        if (!found)
            throw std::runtime_error(
                path + " does not say which Mooncake version it was built from (no kvblob_mooncake_source_version "
                       "symbol); this driver speaks the C API of Mooncake " + kSupportedVersion +
                " and loads only a library built by scripts/build-mooncake, which links that symbol in");
        if (std::string(found) != kSupportedVersion)
            throw std::runtime_error(path + " is Mooncake " + found + "; this driver speaks the C API of Mooncake " +
                                     kSupportedVersion + " (store_c.h's struct layouts and return conventions)");
        resolve(handle_, path, "mooncake_store_create", api_.create, true);
        resolve(handle_, path, "mooncake_store_destroy", api_.destroy, true);
        resolve(handle_, path, "mooncake_store_setup", api_.setup, true);
        resolve(handle_, path, "mooncake_store_health_check", api_.health_check, true);
        resolve(handle_, path, "mooncake_store_batch_put_from", api_.batch_put_from, true);
        resolve(handle_, path, "kvblob_mooncake_batch_put_from_reporting_existing", api_.batch_put_reporting_existing,
                false);
        if (!api_.batch_put_reporting_existing)
            throw std::runtime_error(path + " has no symbol kvblob_mooncake_batch_put_from_reporting_existing: it was "
                                            "built by an older scripts/build-mooncake; run that script again");
        resolve(handle_, path, "mooncake_store_batch_get_into", api_.batch_get_into, true);
        resolve(handle_, path, "mooncake_store_batch_is_exist", api_.batch_is_exist, true);
        resolve(handle_, path, "mooncake_store_get_size", api_.get_size, true);
        resolve(handle_, path, "mooncake_store_register_buffer", api_.register_buffer, true);
        resolve(handle_, path, "mooncake_store_unregister_buffer", api_.unregister_buffer, true);
        resolve(handle_, path, "mooncake_store_remove", api_.remove, false);
        resolve(handle_, path, "mooncake_store_get_hostname", api_.get_hostname, false);
        resolve(handle_, path, "mooncake_store_fake_stage", api_.fake_stage, false);
    } catch (...) {
        ::dlclose(handle_);
        throw;
    }
}

StoreLibrary::~StoreLibrary()
{
    if (handle_) ::dlclose(handle_);
}

}  // namespace kvblob::mooncake
