#include "kvblob/support/device_copy.hpp"

#if defined(KVBLOB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kvblob::support {

#if defined(KVBLOB_HAVE_CUDA)

namespace {

constexpr size_t chunk_bytes = 4u << 20;

// A thread's staging: two pinned buffers, a stream, an event per buffer.
struct Staging {
    uint8_t *buffer[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
    int device = -1;
    bool ready = false;

    bool prepare(int ordinal, std::string &error)
    {
        if (ready && device == ordinal) return check(cudaSetDevice(ordinal), "cudaSetDevice", error);
        release();
        if (!check(cudaSetDevice(ordinal), "cudaSetDevice", error) ||
            !check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", error))
            return false;
        for (int i = 0; i < 2; ++i)
            if (!check(cudaHostAlloc(reinterpret_cast<void **>(&buffer[i]), chunk_bytes, cudaHostAllocDefault),
                       "cudaHostAlloc", error) ||
                !check(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming), "cudaEventCreate", error))
                return false;
        device = ordinal;
        ready = true;
        return true;
    }
    void release()
    {
        for (int i = 0; i < 2; ++i) {
            if (buffer[i]) cudaFreeHost(buffer[i]);
            if (done[i]) cudaEventDestroy(done[i]);
            buffer[i] = nullptr;
            done[i] = nullptr;
        }
        if (stream) cudaStreamDestroy(stream);
        stream = nullptr;
        ready = false;
    }
    ~Staging() { release(); }

    static bool check(cudaError_t e, const char *what, std::string &error)
    {
        if (e == cudaSuccess) return true;
        error = std::string(what) + ": " + cudaGetErrorString(e);
        return false;
    }
};

thread_local Staging staging;

}  // namespace

std::string cuda_unavailable_reason()
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    return count > 0 ? std::string() : "no CUDA device";
}

bool cuda_device_present()
{
    static const bool present = cuda_unavailable_reason().empty();
    return present;
}

bool device_to_host(const uint8_t *src, size_t n, int ordinal,
                    const std::function<void(const uint8_t *, size_t)> &consume, std::string &error)
{
    Staging &s = staging;
    if (!s.prepare(ordinal, error)) return false;
    const size_t chunks = (n + chunk_bytes - 1) / chunk_bytes;
    auto issue = [&](size_t c) {
        const size_t at = c * chunk_bytes, len = std::min(chunk_bytes, n - at);
        return Staging::check(cudaMemcpyAsync(s.buffer[c % 2], src + at, len, cudaMemcpyDeviceToHost, s.stream),
                              "cudaMemcpyAsync", error) &&
               Staging::check(cudaEventRecord(s.done[c % 2], s.stream), "cudaEventRecord", error);
    };
    if (chunks && !issue(0)) return false;
    for (size_t c = 0; c < chunks; ++c) {
        // The next chunk's DMA runs while this one is consumed.
        if (c + 1 < chunks && !issue(c + 1)) return false;
        if (!Staging::check(cudaEventSynchronize(s.done[c % 2]), "cudaEventSynchronize", error)) return false;
        consume(s.buffer[c % 2], std::min(chunk_bytes, n - c * chunk_bytes));
    }
    return true;
}

bool host_to_device(uint8_t *dst, size_t n, int ordinal, const std::function<void(uint8_t *, size_t)> &produce,
                    std::string &error)
{
    Staging &s = staging;
    if (!s.prepare(ordinal, error)) return false;
    const size_t chunks = (n + chunk_bytes - 1) / chunk_bytes;
    for (size_t c = 0; c < chunks; ++c) {
        const size_t at = c * chunk_bytes, len = std::min(chunk_bytes, n - at);
        // The buffer's previous DMA must be done before it is filled again;
        // meanwhile the other buffer's DMA runs.
        if (c >= 2 && !Staging::check(cudaEventSynchronize(s.done[c % 2]), "cudaEventSynchronize", error))
            return false;
        produce(s.buffer[c % 2], len);
        if (!Staging::check(cudaMemcpyAsync(dst + at, s.buffer[c % 2], len, cudaMemcpyHostToDevice, s.stream),
                            "cudaMemcpyAsync", error) ||
            !Staging::check(cudaEventRecord(s.done[c % 2], s.stream), "cudaEventRecord", error))
            return false;
    }
    return Staging::check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize", error);
}

#else  // built without the CUDA Toolkit

bool cuda_device_present() { return false; }
std::string cuda_unavailable_reason() { return "no CUDA device (kvblob was built without the CUDA Toolkit)"; }

bool device_to_host(const uint8_t *, size_t, int, const std::function<void(const uint8_t *, size_t)> &,
                    std::string &error)
{
    error = "kvblob was built without the CUDA Toolkit";
    return false;
}

bool host_to_device(uint8_t *, size_t, int, const std::function<void(uint8_t *, size_t)> &, std::string &error)
{
    error = "kvblob was built without the CUDA Toolkit";
    return false;
}

#endif

}  // namespace kvblob::support
