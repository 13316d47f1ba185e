// The memory a lane moves rows from and into: host memory, or CUDA device
// memory on device 0 (kvblob-bench --memory device) when the bench was
// built with the CUDA Toolkit and a device is present.
//
// Host memory is page-aligned, every buffer of every lane, driver or
// baseline: how fast bytes move into and out of a buffer depends on where
// it starts within its page (copies from the page cache most of all), so
// both sides of a ratio get buffers that start at the same page offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvblob::bench {

// size bytes of zeroed host memory starting at a page boundary.
class HostBuffer {
public:
    explicit HostBuffer(size_t size);
    uint8_t *data() const { return bytes_.get(); }
    size_t size() const { return size_; }

private:
    struct Free {
        void operator()(uint8_t *p) const;
    };
    std::unique_ptr<uint8_t, Free> bytes_;
    size_t size_;
};

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
    std::unique_ptr<HostBuffer> host_;
};

// cudaMemcpy of n bytes between device and host memory, one way; false when
// CUDA fails.
bool cuda_copy(void *dst, const void *src, size_t n, bool to_device);

}  // namespace kvblob::bench
