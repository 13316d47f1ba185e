#include "kvblob/support/trailer.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

namespace kvblob::support {

namespace {

// FNV-1a from two bases over the same bytes, in one loop: each chain waits
// on its own multiply, so two side by side cost about what one does.
void fnv1a_twice(std::string_view s, uint64_t &a, uint64_t &b)
{
    for (unsigned char c : s) {
        a = (a ^ c) * 0x100000001b3ull;
        b = (b ^ c) * 0x100000001b3ull;
    }
}

void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

constexpr char magic[4] = {'T', 'L', 'B', 'K'};

}  // namespace

KeyDigest key_digest(std::string_view key)
{
    KeyDigest d{};
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    fnv1a_twice(key, a, b);
    put64(d.data(), a);
    put64(d.data() + 8, b);
    return d;
}

KeyDigest key_digest_v2(std::string_view key)
{
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(key.data(), key.size()));
    KeyDigest d;
    static_assert(sizeof canonical.digest == sizeof d);
    std::memcpy(d.data(), canonical.digest, d.size());
    return d;
}

namespace {

// The digest a trailer of this version carries (version 1 for any version
// but 2: the callers have checked it is one of the two).
KeyDigest digest_for(uint32_t version, std::string_view key, const KeyDigest *known_v1)
{
    if (version == trailer_v2) return key_digest_v2(key);
    return known_v1 ? *known_v1 : key_digest(key);
}

}  // namespace

void write_trailer(uint8_t *out, uint32_t version, std::string_view key, uint64_t len, uint32_t crc,
                   const KeyDigest *known_v1)
{
    std::memcpy(out, magic, 4);
    put32(out + 4, version);
    const KeyDigest d = digest_for(version, key, known_v1);
    std::memcpy(out + 8, d.data(), 16);
    put64(out + 24, len);
    put32(out + 32, crc);
    put32(out + 36, 0);
}

const char *to_string(TrailerFault f)
{
    switch (f) {
    case TrailerFault::none: return "ok";
    case TrailerFault::too_short: return "stored object is shorter than its trailer";
    case TrailerFault::bad_magic: return "stored object has a bad magic (not TLBK)";
    case TrailerFault::bad_version: return "stored object has an unknown format version";
    case TrailerFault::bad_key: return "stored object belongs to another key (key digest mismatch)";
    case TrailerFault::bad_length: return "stored object's length does not match its trailer";
    case TrailerFault::bad_checksum: return "stored object's payload fails its CRC32C";
    }
    return "unknown trailer fault";
}

TrailerFault check_trailer(const uint8_t *object, uint64_t object_size, std::string_view key,
                           uint64_t &payload_len, uint32_t &crc)
{
    if (object_size < trailer_size) return TrailerFault::too_short;
    return check_trailer_bytes(object + object_size - trailer_size, object_size, key, payload_len, crc);
}

TrailerFault check_trailer_bytes(const uint8_t *t, uint64_t object_size, std::string_view key,
                                 uint64_t &payload_len, uint32_t &crc, const KeyDigest *known_v1)
{
    if (object_size < trailer_size) return TrailerFault::too_short;
    if (std::memcmp(t, magic, 4) != 0) return TrailerFault::bad_magic;
    const uint32_t version = get32(t + 4);
    if (version != trailer_v1 && version != trailer_v2) return TrailerFault::bad_version;
    const KeyDigest d = digest_for(version, key, known_v1);
    if (std::memcmp(t + 8, d.data(), 16) != 0) return TrailerFault::bad_key;
    payload_len = get64(t + 24);
    if (payload_len != object_size - trailer_size) return TrailerFault::bad_length;
    crc = get32(t + 32);
    return TrailerFault::none;
}

}  // namespace kvblob::support
