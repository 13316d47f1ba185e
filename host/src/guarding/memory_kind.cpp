#include "memory_kind.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace kvblob {

namespace {

// The few CUDA driver API declarations used, from cuda.h's documented ABI.
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
constexpr unsigned CU_MEMORYTYPE_DEVICE = 2;

struct CudaDriver {
    CUresult (*init)(unsigned flags) = nullptr;
    CUresult (*pointer_attribute)(void *data, int attribute, CUdeviceptr ptr) = nullptr;
    bool usable = false;

    CudaDriver()
    {
        // Never unloaded: the driver keeps state for the process's life.
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return;
        init = reinterpret_cast<decltype(init)>(dlsym(lib, "cuInit"));
        pointer_attribute = reinterpret_cast<decltype(pointer_attribute)>(dlsym(lib, "cuPointerGetAttribute"));
        usable = init && pointer_attribute && init(0) == 0;
    }
};

const CudaDriver &cuda_driver()
{
    static const CudaDriver driver;
    return driver;
}

std::string describe(const kvblob_region_desc_t &desc)
{
    char buf[160];
    std::snprintf(buf, sizeof buf, "region at %p (%llu bytes)", desc.base,
                  static_cast<unsigned long long>(desc.size));
    return buf;
}

}  // namespace

std::string memory_kind_problem(const kvblob_region_desc_t &desc)
{
    const CudaDriver &cuda = cuda_driver();
    if (!cuda.usable) {
        if (desc.kind == KVBLOB_MEMORY_DEVICE)
            return "DEVICE " + describe(desc) + ", but no usable CUDA driver (libcuda.so.1) can confirm it is device memory";
        return {};
    }
    unsigned type = 0;
    const auto ptr = reinterpret_cast<CUdeviceptr>(desc.base);
    // Pageable host memory is unknown to CUDA: the call fails, and the
    // memory is not device memory.
    const bool on_device = cuda.pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) == 0 &&
                           type == CU_MEMORYTYPE_DEVICE;
    if (desc.kind == KVBLOB_MEMORY_HOST) {
        if (on_device) return "HOST " + describe(desc) + " is CUDA device memory";
        return {};
    }
    if (!on_device) return "DEVICE " + describe(desc) + " is not CUDA device memory";
    int ordinal = -1;
    if (cuda.pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) == 0 &&
        ordinal != desc.device_ordinal)
        return "DEVICE " + describe(desc) + " names device " + std::to_string(desc.device_ordinal) +
               ", but its memory is on device " + std::to_string(ordinal);
    return {};
}

}  // namespace kvblob
