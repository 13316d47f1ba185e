// The memory a lane moves rows from and into: host memory, or CUDA device
// memory on device 0 (kvblob-bench --memory device) when the bench was
// built with the CUDA Toolkit and a device is present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvblob::bench {

class LaneMemory {
public:
    // Throws std::runtime_error when device memory is asked for and cannot
    // be had.
    LaneMemory(size_t size, bool device);
    ~LaneMemory();
    LaneMemory(const LaneMemory &) = delete;
    LaneMemory &operator=(const LaneMemory &) = delete;

    uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    bool device() const { return device_; }
    void upload(const std::vector<uint8_t> &bytes);
    std::vector<uint8_t> download() const;

private:
    uint8_t *data_ = nullptr;
    size_t size_;
    bool device_;
    std::vector<uint8_t> host_;
};

// cudaMemcpy of n bytes between device and host memory, one way; false when
// CUDA fails.
bool cuda_copy(void *dst, const void *src, size_t n, bool to_device);

}  // namespace kvblob::bench
