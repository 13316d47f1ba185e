// OpenSSL's SHA-256, the reference the tests hold the project's one
// implementation to (host/internal/kvblob/host/sha256*.hpp). Only tests call
// OpenSSL (tests/architecture/one_sha256.py keeps it so).
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string_view>

inline std::array<uint8_t, 32> openssl_sha256(std::string_view bytes)
{
    std::array<uint8_t, 32> out{};
    unsigned int length = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &length, EVP_sha256(), nullptr) != 1 || length != 32)
        throw std::runtime_error("OpenSSL's EVP_Digest(SHA-256) failed");
    return out;
}
