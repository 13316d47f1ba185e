#include "lane_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "kvblob/tools/cuda_device.hpp"

#if defined(KVBLOB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kvblob::bench {

namespace {

constexpr size_t page = 4096;

}  // namespace

HostBuffer::HostBuffer(size_t size) : size_(size)
{
    // aligned_alloc wants a multiple of the alignment; a zero-sized buffer
    // still gets a page, so data() is never null.
    const size_t rounded = size ? (size + page - 1) / page * page : page;
    bytes_.reset(static_cast<uint8_t *>(std::aligned_alloc(page, rounded)));
    if (!bytes_) throw std::bad_alloc();
    std::memset(bytes_.get(), 0, rounded);  // touched now, as a vector's would be
}

void HostBuffer::Free::operator()(uint8_t *p) const { std::free(p); }

#if defined(KVBLOB_HAVE_CUDA)


bool cuda_copy(void *dst, const void *src, size_t n, bool to_device)
{
    return cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) == cudaSuccess;
}

LaneMemory::LaneMemory(size_t size, bool device) : size_(size), device_(device)
{
    if (!device) {
        host_ = std::make_unique<HostBuffer>(size);
        data_ = host_->data();
        return;
    }
    if (const std::string why = tools::cuda_unavailable_reason(); !why.empty()) throw std::runtime_error(why);
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
    std::vector<uint8_t> out(size_);
    if (!device_) {
        std::memcpy(out.data(), data_, size_);
        return out;
    }
    if (!cuda_copy(out.data(), data_, size_, false)) throw std::runtime_error("cudaMemcpy failed");
    return out;
}

#else  // built without the CUDA Toolkit

bool cuda_copy(void *, const void *, size_t, bool) { return false; }

LaneMemory::LaneMemory(size_t size, bool device) : size_(size), device_(device)
{
    if (device) throw std::runtime_error(tools::cuda_unavailable_reason());
    host_ = std::make_unique<HostBuffer>(size);
    data_ = host_->data();
}
LaneMemory::~LaneMemory() = default;
void LaneMemory::upload(const std::vector<uint8_t> &bytes) { std::memcpy(data_, bytes.data(), size_); }
std::vector<uint8_t> LaneMemory::download() const { return {data_, data_ + size_}; }

#endif

}  // namespace kvblob::bench
