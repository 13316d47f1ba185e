#include "kvblob/tools/cuda_device.hpp"

#if defined(KVBLOB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kvblob::tools {

#if defined(KVBLOB_HAVE_CUDA)

std::string cuda_unavailable_reason()
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    return count > 0 ? std::string() : "no CUDA device";
}

#else  // built without the CUDA Toolkit

std::string cuda_unavailable_reason() { return "no CUDA device (kvblob was built without the CUDA Toolkit)"; }

#endif

}  // namespace kvblob::tools
