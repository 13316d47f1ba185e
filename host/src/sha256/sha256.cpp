#include "kvblob/host/sha256.hpp"

#include "kvblob/host/hex.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace kvblob {

namespace {

[[noreturn]] void openssl_failed(const char *what)
{
    throw std::runtime_error(std::string("OpenSSL's SHA-256: ") + what + " failed");
}

std::string hex(const std::array<uint8_t, 32> &digest)
{
    std::string out(2 * digest.size(), '\0');
    write_hex(digest.data(), digest.size(), out.data());
    return out;
}

}  // namespace

Sha256::Sha256() : md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)), ctx_(EVP_MD_CTX_new())
{
    if (!md_ || !ctx_) {
        EVP_MD_free(md_);
        EVP_MD_CTX_free(ctx_);
        openssl_failed(md_ ? "EVP_MD_CTX_new" : "EVP_MD_fetch(\"SHA256\")");
    }
    try {
        restart();
    } catch (...) {
        EVP_MD_CTX_free(ctx_);
        EVP_MD_free(md_);
        throw;
    }
}

Sha256::~Sha256()
{
    EVP_MD_CTX_free(ctx_);
    EVP_MD_free(md_);
}

void Sha256::restart()
{
    if (EVP_DigestInit_ex(ctx_, md_, nullptr) != 1) openssl_failed("EVP_DigestInit_ex");
}

void Sha256::update(const void *data, size_t size)
{
    if (size && EVP_DigestUpdate(ctx_, data, size) != 1) openssl_failed("EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::finish()
{
    std::array<uint8_t, 32> out{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_, out.data(), &length) != 1 || length != out.size()) openssl_failed("EVP_DigestFinal_ex");
    restart();
    return out;
}

std::array<uint8_t, 32> sha256_digest(std::string_view bytes)
{
    Sha256 s;
    s.update(bytes.data(), bytes.size());
    return s.finish();
}

std::string sha256_hex(std::string_view bytes) { return hex(sha256_digest(bytes)); }

std::string sha256_file_hex(const std::filesystem::path &file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string() + " to take its SHA-256");
    Sha256 s;
    std::vector<char> buf(1 << 16);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
        s.update(buf.data(), static_cast<size_t>(in.gcount()));
    return hex(s.finish());
}

std::string sha256_fd_hex(int fd)
{
    Sha256 s;
    std::vector<uint8_t> buf(1 << 16);
    off_t offset = 0;
    for (;;) {
        ssize_t n = pread(fd, buf.data(), buf.size(), offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(std::string("cannot read it to take its SHA-256: ") + std::strerror(errno));
        if (n == 0) break;
        s.update(buf.data(), static_cast<size_t>(n));
        offset += n;
    }
    return hex(s.finish());
}

}  // namespace kvblob
