// CUDA device memory for the device checks: a buffer with canary bytes on
// both sides of the part spans may touch (R-REG-3, as GuardedBuffer does for
// host memory, though a GPU cannot trap a stray write: the canaries are
// read back instead). Built with the CUDA Toolkit when it was found; without
// it, no device is ever present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvblob::conformance {

class DeviceBuffer {
public:
    static constexpr size_t canary_bytes = 4096;
    static constexpr uint8_t canary_value = 0xC5;

    // size usable bytes on device 0, between two canaries; throws
    // std::runtime_error when CUDA fails.
    explicit DeviceBuffer(size_t size);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;

    uint8_t *data() const { return base_ + canary_bytes; }
    size_t size() const { return size_; }
    void upload(const std::vector<uint8_t> &bytes);  // bytes.size() == size()
    std::vector<uint8_t> download() const;
    bool canary_intact() const;

private:
    uint8_t *base_ = nullptr;
    size_t size_;
};

}  // namespace kvblob::conformance
