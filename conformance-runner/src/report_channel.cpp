#include "report_channel.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "kvblob/host/sha256_compress.hpp"

namespace kvblob::conformance {

namespace {

// SHA-256 (FIPS 180-4), incremental and allocation-free: the host's Sha256
// goes through OpenSSL, which a signal handler may not call. The rounds are
// the host's portable compression (sha256_compress.hpp), which allocates
// nothing and calls nothing.
class Sha256Block {
public:
    void update(const uint8_t *data, size_t size)
    {
        for (size_t i = 0; i < size; ++i) {
            buf_[fill_++] = data[i];
            if (fill_ == 64) {
                compress();
                fill_ = 0;
            }
        }
        bits_ += static_cast<uint64_t>(size) * 8;
    }
    std::array<uint8_t, 32> finish()
    {
        const uint64_t bits = bits_;
        const uint8_t one = 0x80, zero = 0;
        update(&one, 1);
        while (fill_ != 56) update(&zero, 1);
        uint8_t length[8];
        for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
        update(length, 8);
        std::array<uint8_t, 32> out{};
        for (int i = 0; i < 8; ++i) sha256_detail::store_be(h_[i], out.data() + 4 * i);
        return out;
    }

private:
    void compress() { sha256_detail::compress_portable(h_, buf_, 1); }

    uint32_t h_[8] = {sha256_detail::initial[0], sha256_detail::initial[1], sha256_detail::initial[2],
                      sha256_detail::initial[3], sha256_detail::initial[4], sha256_detail::initial[5],
                      sha256_detail::initial[6], sha256_detail::initial[7]};
    uint8_t buf_[64] = {};
    size_t fill_ = 0;
    uint64_t bits_ = 0;
};

void to_hex(const std::array<uint8_t, 32> &mac, char *out)
{
    for (size_t i = 0; i < mac.size(); ++i) {
        out[2 * i] = "0123456789abcdef"[mac[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[mac[i] & 0xF];
    }
}

}  // namespace

std::array<uint8_t, 32> hmac_sha256(const uint8_t *key, size_t key_size, const void *data, size_t size)
{
    uint8_t pad[64] = {};
    std::memcpy(pad, key, key_size < 64 ? key_size : 64);
    for (auto &b : pad) b ^= 0x36;
    Sha256Block inner;
    inner.update(pad, 64);
    inner.update(static_cast<const uint8_t *>(data), size);
    const auto inner_digest = inner.finish();
    for (auto &b : pad) b ^= 0x36 ^ 0x5c;
    Sha256Block outer;
    outer.update(pad, 64);
    outer.update(inner_digest.data(), inner_digest.size());
    return outer.finish();
}

RunKey fresh_key()
{
    RunKey k{};
    for (size_t got = 0; got < k.size();) {
        const ssize_t n = getrandom(k.data() + got, k.size() - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
        got += static_cast<size_t>(n);
    }
    return k;
}

std::unique_ptr<RunKey> take_child_key()
{
    // On the heap, allocated now, among the process's other allocations: no
    // symbol of the binary names it (a global would: the runner is not
    // stripped), and no mapping of its own points at it.
    auto key = std::make_unique<RunKey>();
    size_t got = 0;
    while (got < key->size()) {
        const ssize_t n = read(child_key_fd, key->data() + got, key->size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    close(child_key_fd);
    if (got != key->size()) key.reset();
    return key;
}

size_t sign_record(const RunKey &key, const char *text, size_t size, char *out)
{
    to_hex(hmac_sha256(key.data(), key.size(), text, size), out);
    out[64] = ' ';
    std::memcpy(out + 65, text, size);
    out[65 + size] = '\0';
    return size + record_overhead;
}

void write_record(const RunKey &key, int fd, std::string text)
{
    for (char &ch : text)
        if (ch == '\0') ch = ' ';
    std::string record(text.size() + record_overhead, '\0');
    sign_record(key, text.data(), text.size(), record.data());
    for (size_t done = 0; done < record.size();) {
        const ssize_t n = write(fd, record.data() + done, record.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<size_t>(n);
    }
}

Records read_records(const std::string &channel, const RunKey &key, bool overflowed)
{
    Records out;
    out.overflowed = overflowed;
    size_t at = 0;
    // Only complete records count: a child killed while writing leaves a
    // partial one, which is neither its word nor a forgery.
    for (size_t end; (end = channel.find('\0', at)) != std::string::npos; at = end + 1) {
        const std::string_view record(channel.data() + at, end - at);
        bool ok = record.size() >= 65 && record[64] == ' ';
        if (ok) {
            char mac[64];
            to_hex(hmac_sha256(key.data(), key.size(), record.data() + 65, record.size() - 65), mac);
            ok = std::memcmp(mac, record.data(), 64) == 0;
        }
        if (ok) out.authentic.emplace_back(record.substr(65));
        else out.forged_bytes += record.size() + 1;
    }
    return out;
}

}  // namespace kvblob::conformance
