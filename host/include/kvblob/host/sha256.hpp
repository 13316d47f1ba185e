// SHA-256 (FIPS 180-4), for naming exactly which plugin file was judged or
// loaded. Not for secrets: no constant-time guarantees.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kvblob {

// Lowercase hex digest of bytes.
std::string sha256_hex(std::string_view bytes);

// Lowercase hex digest of a file's contents; throws std::runtime_error naming
// the file when it cannot be read.
std::string sha256_file_hex(const std::filesystem::path &file);

}  // namespace kvblob
