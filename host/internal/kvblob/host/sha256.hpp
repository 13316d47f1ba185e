// SHA-256 (FIPS 180-4), for naming exactly which plugin file was judged or
// loaded. Not for secrets: no constant-time guarantees.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace kvblob {

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
