// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto, for naming exactly which
// plugin file was judged or loaded, and for the chained block keys
// (block_sequence.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

struct evp_md_st;
struct evp_md_ctx_st;

namespace kvblob {

// An incremental SHA-256. finish() gives the digest and starts over, so one
// object hashes many inputs without asking OpenSSL for the algorithm again
// (asking for it costs more than hashing a block's hundred bytes).
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256 &) = delete;
    Sha256 &operator=(const Sha256 &) = delete;

    void update(const void *data, size_t size);
    std::array<uint8_t, 32> finish();

private:
    void restart();

    evp_md_st *md_;
    evp_md_ctx_st *ctx_;
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
