// Moving bytes between CUDA device memory and the host, through pinned
// staging buffers (one pair per thread) and a stream of the thread's own,
// in chunks, so the host-side pass over a chunk (a copy with its checksum)
// overlaps the DMA of the next. Built with the CUDA Toolkit when it is found
// at configure time (KVBLOB_HAVE_CUDA); without it every call fails, saying
// so, and no device is ever present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace kvblob::support {

// Whether this process sees at least one CUDA device.
bool cuda_device_present();
// Why it does not ("no CUDA device (...)"); empty when it does.
std::string cuda_unavailable_reason();

// Copies n bytes of device memory at src (on device ordinal) to the host,
// handing each staged chunk, in order, to consume. False, with error set,
// when CUDA fails.
bool device_to_host(const uint8_t *src, size_t n, int ordinal,
                    const std::function<void(const uint8_t *chunk, size_t len)> &consume, std::string &error);

// Fills n bytes of device memory at dst, asking produce to fill each staged
// chunk in order. False, with error set, when CUDA fails.
bool host_to_device(uint8_t *dst, size_t n, int ordinal, const std::function<void(uint8_t *chunk, size_t len)> &produce,
                    std::string &error);

}  // namespace kvblob::support
