#include "lane_memory.hpp"

#include <cstring>
#include <stdexcept>

#include "kvblob/support/device_copy.hpp"

#if defined(KVBLOB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kvblob::bench {


#if defined(KVBLOB_HAVE_CUDA)


bool cuda_copy(void *dst, const void *src, size_t n, bool to_device)
{
    return cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) == cudaSuccess;
}

LaneMemory::LaneMemory(size_t size, bool device) : size_(size), device_(device)
{
    if (!device) {
        host_.resize(size);
        data_ = host_.data();
        return;
    }
    if (const std::string why = support::cuda_unavailable_reason(); !why.empty()) throw std::runtime_error(why);
    if (cudaMalloc(reinterpret_cast<void **>(&data_), size) != cudaSuccess)
        throw std::runtime_error("cudaMalloc of " + std::to_string(size) + " bytes failed");
}

LaneMemory::~LaneMemory()
{
    if (device_ && data_) cudaFree(data_);
}

void LaneMemory::upload(const std::vector<uint8_t> &bytes)
{
    if (!device_) std::memcpy(data_, bytes.data(), size_);
    else if (!cuda_copy(data_, bytes.data(), size_, true)) throw std::runtime_error("cudaMemcpy failed");
}

std::vector<uint8_t> LaneMemory::download() const
{
    if (!device_) return host_;
    std::vector<uint8_t> out(size_);
    if (!cuda_copy(out.data(), data_, size_, false)) throw std::runtime_error("cudaMemcpy failed");
    return out;
}

#else  // built without the CUDA Toolkit

bool cuda_copy(void *, const void *, size_t, bool) { return false; }

LaneMemory::LaneMemory(size_t size, bool device) : size_(size), device_(device)
{
    if (device) throw std::runtime_error(support::cuda_unavailable_reason());
    host_.resize(size);
    data_ = host_.data();
}
LaneMemory::~LaneMemory() = default;
void LaneMemory::upload(const std::vector<uint8_t> &bytes) { std::memcpy(data_, bytes.data(), size_); }
std::vector<uint8_t> LaneMemory::download() const { return host_; }

#endif

}  // namespace kvblob::bench
