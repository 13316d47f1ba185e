#include "report_channel.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "kvblob/host/sha256.hpp"

namespace kvblob::conformance {

namespace {

void to_hex(const std::array<uint8_t, 32> &mac, char *out)
{
    for (size_t i = 0; i < mac.size(); ++i) {
        out[2 * i] = "0123456789abcdef"[mac[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[mac[i] & 0xF];
    }
}

}  // namespace

// HMAC-SHA-256 (RFC 2104) on the host's SHA-256, which allocates nothing
// and calls nothing but its compression: a signal handler may sign.
std::array<uint8_t, 32> hmac_sha256(const uint8_t *key, size_t key_size, const void *data, size_t size)
{
    uint8_t pad[64] = {};
    std::memcpy(pad, key, key_size < 64 ? key_size : 64);
    for (auto &b : pad) b ^= 0x36;
    Sha256 sha;
    sha.update(pad, 64);
    sha.update(data, size);
    const auto inner_digest = sha.finish();
    for (auto &b : pad) b ^= 0x36 ^ 0x5c;
    sha.update(pad, 64);
    sha.update(inner_digest.data(), inner_digest.size());
    return sha.finish();
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
