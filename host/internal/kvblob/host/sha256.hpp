// SHA-256 (FIPS 180-4), the project's one implementation: the compression
// of sha256_compress.hpp (the SHA extensions where the CPU has them,
// portable C++ otherwise) behind an incremental digest, for naming exactly
// which plugin file was judged or loaded, and for the runner's signed
// reports. One message in memory has sha256_oneshot.hpp, a chain of block
// keys sha256_chain.hpp, on the same compression. tests/host/test_sha256.cpp
// holds every form to OpenSSL, which the project itself does not call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace kvblob {

// An incremental SHA-256. finish() gives the digest and starts over, so one
// object hashes many inputs. It allocates nothing and calls nothing but the
// compression, so a signal handler may use it (the runner's report channel,
// conformance-runner/src/report_channel.cpp).
class Sha256 {
public:
    Sha256() noexcept { restart(); }

    void update(const void *data, size_t size) noexcept;
    std::array<uint8_t, 32> finish() noexcept;

private:
    void restart() noexcept;

    uint32_t state_[8];
    uint8_t pending_[64];  // the bytes of a block not yet whole
    size_t fill_ = 0;      // how many of pending_ hold bytes
    uint64_t bytes_ = 0;   // the message's length so far
};

// The 32-byte digest of bytes.
std::array<uint8_t, 32> sha256_digest(std::string_view bytes);

// Lowercase hex digest of bytes.
std::string sha256_hex(std::string_view bytes);

// Lowercase hex digest of a file's contents; throws std::runtime_error naming
// the file when it cannot be read.
std::string sha256_file_hex(const std::filesystem::path &file);

// Lowercase hex digest of everything an open file descriptor holds, read
// from offset 0 with pread (the descriptor's offset is left alone); throws
// std::runtime_error when it cannot be read.
std::string sha256_fd_hex(int fd);

}  // namespace kvblob
