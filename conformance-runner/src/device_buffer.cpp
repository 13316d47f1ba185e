#include "device_buffer.hpp"

#include <stdexcept>

#include "kvblob/tools/cuda_device.hpp"

#if defined(KVBLOB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kvblob::conformance {


#if defined(KVBLOB_HAVE_CUDA)

namespace {

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace


DeviceBuffer::DeviceBuffer(size_t size) : size_(size)
{
    check(cudaMalloc(reinterpret_cast<void **>(&base_), size + 2 * canary_bytes), "cudaMalloc");
    check(cudaMemset(base_, canary_value, size + 2 * canary_bytes), "cudaMemset");
}

DeviceBuffer::~DeviceBuffer()
{
    if (base_) cudaFree(base_);
}

void DeviceBuffer::upload(const std::vector<uint8_t> &bytes)
{
    check(cudaMemcpy(data(), bytes.data(), size_, cudaMemcpyHostToDevice), "cudaMemcpy");
}

std::vector<uint8_t> DeviceBuffer::download() const
{
    std::vector<uint8_t> out(size_);
    check(cudaMemcpy(out.data(), data(), size_, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return out;
}

bool DeviceBuffer::canary_intact() const
{
    std::vector<uint8_t> head(canary_bytes), tail(canary_bytes);
    check(cudaMemcpy(head.data(), base_, canary_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(tail.data(), data() + size_, canary_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (size_t i = 0; i < canary_bytes; ++i)
        if (head[i] != canary_value || tail[i] != canary_value) return false;
    return true;
}

#else  // built without the CUDA Toolkit

DeviceBuffer::DeviceBuffer(size_t size) : size_(size) { throw std::runtime_error(tools::cuda_unavailable_reason()); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const std::vector<uint8_t> &) {}
std::vector<uint8_t> DeviceBuffer::download() const { return {}; }
bool DeviceBuffer::canary_intact() const { return false; }

#endif

}  // namespace kvblob::conformance
