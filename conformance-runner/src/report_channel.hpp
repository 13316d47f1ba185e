// The channel a spawned child reports on (its verdict, what its check left,
// the probe of the driver), authenticated with a key made afresh for each
// child. The child runs driver code in its own process, and a driver may
// write to the descriptor the child reports on, by accident (a logger that
// closed every descriptor and reopened a file there) or blindly on purpose
// (a forged "PASS"). Each record carries an HMAC-SHA256 of its text under
// the child's key, which the runner hands the child on a pipe of its own
// (child_key_fd) that the child reads, into memory no symbol names, and
// closes before it loads the plugin and confines itself (confine.hpp); text that does not carry it is not the
// child's, and the check is not trusted. A driver that finds the key in its
// own process's memory can still forge: in-process isolation stops a
// careless or blind driver, and makes a malicious one work for it, but does
// not stop it (docs/vendor-guide.md, "What the verdict proves").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvblob::conformance {

// Where a spawned child writes its records, and where it reads its key.
inline constexpr int child_result_fd = 3;
inline constexpr int child_key_fd = 4;

using RunKey = std::array<uint8_t, 32>;

// A key for one child: random, made afresh for each (run_spawned), so that
// a key one check's driver found signs nothing another check reports.
RunKey fresh_key();

// In a child, before any plugin code runs: reads the key from child_key_fd
// into memory allocated now (named by no symbol), closes the descriptor, and
// answers it; null when no key came (the child was started by hand). The
// caller keeps it among its locals, and passes it to whatever signs.
std::unique_ptr<RunKey> take_child_key();

// The room a signed record needs beyond its text: the MAC in hex, a space,
// the closing NUL.
inline constexpr size_t record_overhead = 64 + 1 + 1;

// Writes "MAC TEXT\0" into out (at least size + record_overhead bytes) under
// key; returns its length. Allocates nothing.
size_t sign_record(const RunKey &key, const char *text, size_t size, char *out);

// Signs text (its NULs turned into spaces) under key and writes it whole to fd.
void write_record(const RunKey &key, int fd, std::string text);

// What came on a child's channel: the text of each record that carries the
// key's MAC, in order; how many bytes in complete records did not (not the
// child's); and whether the channel brought more than the runner keeps.
struct Records {
    std::vector<std::string> authentic;
    size_t forged_bytes = 0;
    bool overflowed = false;
};
Records read_records(const std::string &channel, const RunKey &key, bool overflowed);

// HMAC-SHA256 (RFC 2104) of data under a key of at most 64 bytes, on the
// host's SHA-256 (kvblob/host/sha256.hpp), which allocates nothing, so that
// a signal handler may use it.
std::array<uint8_t, 32> hmac_sha256(const uint8_t *key, size_t key_size, const void *data, size_t size);

}  // namespace kvblob::conformance
