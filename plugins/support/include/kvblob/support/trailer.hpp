// The object trailer of the bundled drivers (contract.md, "Keys and
// objects"): payload, then magic "TLBK", format version, a 16-byte digest of
// the key, payload length, CRC32C of the payload. Little-endian.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvblob::support {

inline constexpr size_t trailer_size = 40;

// The format versions, which differ only in the key digest. Readers take
// both; each driver writes the newest its readers all take. Objects of the
// memory driver live and die in one process, so it writes version 2; the
// file and Redis stores outlive a process and are shared by engines of
// different kvblob releases, so they keep writing version 1 until every
// release that reads them reads version 2 too.
inline constexpr uint32_t trailer_v1 = 1;  // two FNV-1a 64-bit hashes with different offset bases
inline constexpr uint32_t trailer_v2 = 2;  // XXH3-128, in its canonical (big-endian) bytes

using KeyDigest = std::array<uint8_t, 16>;

// An identity check of the key, not a security measure. key_digest is
// version 1's, which also names the file driver's object files.
KeyDigest key_digest(std::string_view key);
KeyDigest key_digest_v2(std::string_view key);

// Writes the trailer (version trailer_v1 or trailer_v2) for a payload of
// length len with checksum crc into out. known_v1: the key's key_digest,
// where the caller has it already (it is not computed again).
void write_trailer(uint8_t *out, uint32_t version, std::string_view key, uint64_t len, uint32_t crc,
                   const KeyDigest *known_v1 = nullptr);

// Why a stored object is not the one asked for; each has its own message.
enum class TrailerFault { none, too_short, bad_magic, bad_version, bad_key, bad_length, bad_checksum };
const char *to_string(TrailerFault f);

// Checks everything but the checksum (which needs the payload pass):
// object holds stored bytes (payload + trailer). Writes the payload length
// and the recorded checksum on success.
TrailerFault check_trailer(const uint8_t *object, uint64_t object_size, std::string_view key,
                           uint64_t &payload_len, uint32_t &crc);
// The same, given the trailer's trailer_size bytes alone (read from the end
// of an object of object_size bytes), for stores that read it apart.
TrailerFault check_trailer_bytes(const uint8_t *trailer, uint64_t object_size, std::string_view key,
                                 uint64_t &payload_len, uint32_t &crc, const KeyDigest *known_v1 = nullptr);

}  // namespace kvblob::support
