#include "report_channel.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace kvblob::conformance {

namespace {

// SHA-256 (FIPS 180-4), small and allocation-free: the host's Sha256 goes
// through OpenSSL, which a signal handler may not call.
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
        for (int i = 0; i < 8; ++i)
            for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(h_[i] >> (24 - 8 * b));
        return out;
    }

private:
    static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
    void compress()
    {
        static constexpr uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
            0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
            0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
            0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
            0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
            0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
            0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
        uint32_t w[64];
        for (int i = 0; i < 16; ++i)
            w[i] = static_cast<uint32_t>(buf_[4 * i]) << 24 | static_cast<uint32_t>(buf_[4 * i + 1]) << 16 |
                   static_cast<uint32_t>(buf_[4 * i + 2]) << 8 | buf_[4 * i + 3];
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
        for (int i = 0; i < 64; ++i) {
            const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
    }

    uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint8_t buf_[64] = {};
    size_t fill_ = 0;
    uint64_t bits_ = 0;
};

// The key a child signs with (take_run_key); zero until it came.
RunKey child_key{};

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

const RunKey &run_key()
{
    static const RunKey key = [] {
        RunKey k{};
        for (size_t got = 0; got < k.size();) {
            const ssize_t n = getrandom(k.data() + got, k.size() - got, 0);
            if (n < 0) throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
            got += static_cast<size_t>(n);
        }
        return k;
    }();
    return key;
}

bool take_run_key()
{
    size_t got = 0;
    while (got < child_key.size()) {
        const ssize_t n = read(child_key_fd, child_key.data() + got, child_key.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    close(child_key_fd);
    return got == child_key.size();
}

size_t sign_record(const char *text, size_t size, char *out)
{
    to_hex(hmac_sha256(child_key.data(), child_key.size(), text, size), out);
    out[64] = ' ';
    std::memcpy(out + 65, text, size);
    out[65 + size] = '\0';
    return size + record_overhead;
}

void write_record(int fd, std::string text)
{
    for (char &ch : text)
        if (ch == '\0') ch = ' ';
    std::string record(text.size() + record_overhead, '\0');
    sign_record(text.data(), text.size(), record.data());
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
