// The channel a spawned child reports on (its verdict, what its check left,
// the probe of the driver), authenticated with a key made afresh for each
// run. The child runs driver code in its own process, and a driver may
// write to the descriptor the child reports on, by accident (a logger that
// closed every descriptor and reopened a file there) or blindly on purpose
// (a forged "PASS"). Each record carries an HMAC-SHA256 of its text under
// the run's key, which the runner hands the child on a pipe of its own
// (child_key_fd) that the child reads and closes before it loads the
// plugin; text that does not carry it is not the child's, and the check is
// not trusted. A driver that reads the key from its own process's memory
// can still forge: in-process isolation stops a careless or blind driver,
// not a malicious one (docs/vendor-guide.md, "What the verdict proves").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvblob::conformance {

// Where a spawned child writes its records, and where it reads the run's key.
inline constexpr int child_result_fd = 3;
inline constexpr int child_key_fd = 4;

using RunKey = std::array<uint8_t, 32>;

// The run's key: random, made on first use, the same for every child.
const RunKey &run_key();

// In a child, before any plugin code runs: reads the key from child_key_fd
// and closes it. False when none came (the child was started by hand).
bool take_run_key();

// The room a signed record needs beyond its text: the MAC in hex, a space,
// the closing NUL.
inline constexpr size_t record_overhead = 64 + 1 + 1;

// Writes "MAC TEXT\0" into out (at least size + record_overhead bytes) under
// the key take_run_key() read; returns its length. Async-signal-safe (no
// allocation, no locks): the fault handler signs its record too.
size_t sign_record(const char *text, size_t size, char *out);

// Signs text (its NULs turned into spaces) and writes it whole to fd.
void write_record(int fd, std::string text);

// What came on a child's channel: the text of each record that carries the
// key's MAC, in order; how many bytes in complete records did not (not the
// child's); and whether the channel brought more than the runner keeps.
struct Records {
    std::vector<std::string> authentic;
    size_t forged_bytes = 0;
    bool overflowed = false;
};
Records read_records(const std::string &channel, const RunKey &key, bool overflowed);

// HMAC-SHA256 (RFC 2104) of data under a key of at most 64 bytes, computed
// here without allocation so that a signal handler may use it.
std::array<uint8_t, 32> hmac_sha256(const uint8_t *key, size_t key_size, const void *data, size_t size);

}  // namespace kvblob::conformance
