#include "kvblob/host/sha256.hpp"

#include "kvblob/host/hex.hpp"
#include "kvblob/host/sha256_compress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace kvblob {

namespace {

std::string hex(const std::array<uint8_t, 32> &digest)
{
    std::string out(2 * digest.size(), '\0');
    write_hex(digest.data(), digest.size(), out.data());
    return out;
}

// The compression this machine runs (sha256_compress.hpp).
void compress(uint32_t state[8], const uint8_t *data, size_t blocks) noexcept
{
#ifdef KVBLOB_SHA_NI
    if (sha256_detail::use_sha_ni()) return sha256_detail::compress_sha_ni(state, data, blocks);
#endif
    sha256_detail::compress_portable(state, data, blocks);
}

}  // namespace

void Sha256::restart() noexcept
{
    std::memcpy(state_, sha256_detail::initial, sizeof state_);
    fill_ = 0;
    bytes_ = 0;
}

void Sha256::update(const void *data, size_t size) noexcept
{
    const auto *in = static_cast<const uint8_t *>(data);
    bytes_ += size;
    if (fill_) {  // a block begun by an earlier update: made whole first
        const size_t take = std::min(size, sizeof pending_ - fill_);
        std::memcpy(pending_ + fill_, in, take);
        fill_ += take, in += take, size -= take;
        if (fill_ < sizeof pending_) return;
        compress(state_, pending_, 1);
        fill_ = 0;
    }
    const size_t whole = size / 64;  // straight from the caller's bytes
    compress(state_, in, whole);
    in += 64 * whole, size -= 64 * whole;
    std::memcpy(pending_, in, size);
    fill_ = size;
}

std::array<uint8_t, 32> Sha256::finish() noexcept
{
    uint8_t tail[128];
    std::memcpy(tail, pending_, fill_);
    compress(state_, tail, sha256_detail::write_padding(tail, fill_, bytes_));
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i) sha256_detail::store_be(state_[i], out.data() + 4 * i);
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
