// The host verifies a region's memory kind at registration (R-ADM-8) with
// the CUDA driver API. With no CUDA driver, a DEVICE region cannot be
// confirmed and is refused. With tests/fakes/cuda's fake libcuda.so.1 first
// on LD_LIBRARY_PATH (ctest: host_memory_kind_with_fake_cuda), the CUDA path
// itself is exercised: device, pinned and pageable memory, and ordinals.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <vector>

#include "fixtures/spy.hpp"
#include "kvblob/host/plugin.hpp"

namespace {

struct DeviceSpy {
    kvblob::Plugin plugin = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");
    kvblob::Driver driver = plugin.open({{"caps", "device_memory"}});
    const kvblob_spy *spy =
        static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1"));

    // The rule of the host's refusal, or "" when the driver got the region.
    std::string try_register(std::vector<uint8_t> &memory, kvblob_memory_kind kind, int32_t ordinal = 0)
    {
        const uint64_t before = spy->calls[s_register].load();
        try {
            kvblob_region_desc_t desc{sizeof desc, kind, memory.data(), memory.size(), ordinal, 0};
            kvblob::Region r = driver.register_region(desc);
            CHECK(spy->calls[s_register].load() == before + 1);
            return "";
        } catch (const kvblob::CallError &e) {
            CHECK(spy->calls[s_register].load() == before);  // refused before dispatch
            MESSAGE(std::string(e.what()));
            return e.rule();
        }
    }
};

using MarkFn = int (*)(void *, size_t, int, unsigned);
using ClearFn = void (*)();

}  // namespace

TEST_CASE("memory kind: a DEVICE region no CUDA driver can confirm is refused (R-ADM-8), HOST memory registers")
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (cuda && dlsym(cuda, "fake_cuda_mark")) {
        MESSAGE("the fake CUDA driver is loaded here: the next test case checks this path");
        return;
    }
    DeviceSpy s;
    std::vector<uint8_t> memory(4096);
    CHECK(s.try_register(memory, KVBLOB_MEMORY_HOST).empty());
    // With a real driver, pageable memory is not device memory; without
    // one, nothing can confirm it is: refused either way.
    CHECK(s.try_register(memory, KVBLOB_MEMORY_DEVICE) == "R-ADM-8");
}

TEST_CASE("memory kind: device, pinned and pageable memory are told apart through the CUDA driver API")
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    auto mark = cuda ? reinterpret_cast<MarkFn>(dlsym(cuda, "fake_cuda_mark")) : nullptr;
    auto clear = cuda ? reinterpret_cast<ClearFn>(dlsym(cuda, "fake_cuda_mark_clear")) : nullptr;
    if (!mark || !clear) {
        MESSAGE("skipped: needs tests/fakes/cuda's libcuda.so.1 first on LD_LIBRARY_PATH "
                "(ctest -R host_memory_kind_with_fake_cuda)");
        return;
    }
    DeviceSpy s;
    std::vector<uint8_t> device(8192), pinned(4096), pageable(4096);
    clear();
    REQUIRE(mark(device.data(), device.size(), 1, 2) == 0);  // device memory on ordinal 1
    REQUIRE(mark(pinned.data(), pinned.size(), 0, 1) == 0);  // pinned host memory
    CHECK(s.try_register(device, KVBLOB_MEMORY_DEVICE, 1).empty());
    CHECK(s.try_register(device, KVBLOB_MEMORY_DEVICE, 0) == "R-ADM-8");  // the wrong ordinal
    CHECK(s.try_register(device, KVBLOB_MEMORY_HOST) == "R-ADM-8");       // device memory called HOST
    CHECK(s.try_register(pinned, KVBLOB_MEMORY_HOST).empty());            // pinned memory is HOST
    CHECK(s.try_register(pinned, KVBLOB_MEMORY_DEVICE) == "R-ADM-8");
    CHECK(s.try_register(pageable, KVBLOB_MEMORY_HOST).empty());
    CHECK(s.try_register(pageable, KVBLOB_MEMORY_DEVICE) == "R-ADM-8");
    clear();
}
