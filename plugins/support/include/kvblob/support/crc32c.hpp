// CRC32C (Castagnoli), the checksum every bundled driver stores with its
// objects. The CPU is asked once, at run time, what it has: carry-less
// multiply folding over 512-bit registers (AVX-512 and VPCLMULQDQ), over
// 256-bit ones (AVX2 and VPCLMULQDQ), over 128-bit ones (PCLMULQDQ), the
// SSE4.2 crc32 instruction in three independent streams, and a
// slicing-by-8 table. Which of those runs at which size is not a rule
// about vendors or models: at first use each is timed on this CPU, alone
// and fused with a copy, at a few sizes, and the fastest kept per size
// band (crc32c_choice). KVBLOB_CRC32C_PATH=NAME pins one path instead.
// Each gives the same checksum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvblob::support {

// Extends crc (0 to start) over n bytes.
uint32_t crc32c(uint32_t crc, const void *data, size_t n);

// Copies n bytes from src to dst and returns crc extended over them, in one
// pass over the data (a put reads its spans once).
uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

// True when the hardware instruction is in use.
bool crc32c_hardware();

// Each implementation this CPU runs, the portable one first and the widest
// last: for tests that hold them to one another, and for measuring.
struct Crc32cPath {
    const char *name;
    uint32_t (*plain)(uint32_t crc, const void *data, size_t n);
    uint32_t (*copy)(uint32_t crc, void *dst, const void *src, size_t n);
};
const std::vector<Crc32cPath> &crc32c_paths();

// ---- the choice, by measurement -------------------------------------------

// The sizes the calibration times. Each stands for a band of sizes that
// runs from the geometric midpoint with the size below to the one with the
// size above: up to 2 KiB, 2-8 KiB, 8-32 KiB, 32 KiB and more.
inline constexpr std::array<size_t, 4> crc32c_calibration_sizes{1024, 4096, 16384, 65536};
inline constexpr size_t crc32c_bands = crc32c_calibration_sizes.size();

// The band a checksum of n bytes falls in.
constexpr size_t crc32c_band(size_t n) { return n < 2048 ? 0 : n < 8192 ? 1 : n < 32768 ? 2 : 3; }

enum Crc32cOp : size_t { crc32c_plain = 0, crc32c_fused_copy = 1 };

// Nanoseconds per call of each path (in crc32c_paths order), each op and
// each calibration size: the least of the timed rounds. Infinity where a
// path was not timed.
using Crc32cPathTimings = std::array<std::array<double, crc32c_bands>, 2>;
using Crc32cTimings = std::vector<Crc32cPathTimings>;

struct Crc32cChoice {
    // Index into crc32c_paths(), per op and band.
    std::array<std::array<size_t, crc32c_bands>, 2> path{};
    // How it was chosen: "measured", "pinned by KVBLOB_CRC32C_PATH", or
    // "one path" where this CPU runs only the portable one.
    std::string how;
    // Set where KVBLOB_CRC32C_PATH named no path this CPU runs: what it
    // said and what was done instead (also written to stderr once).
    std::string warning;
    Crc32cTimings timings;  // empty unless measured
    unsigned rounds = 0;    // timed rounds (after one warm-up round)
    double seconds = 0;     // the calibration's whole time
};

// The fastest path per op and band by the timings given (one entry per
// path): the least figure wins, a tie goes to the earlier path, and a band
// where no path was timed takes the last (widest) path.
Crc32cChoice choose_crc32c_paths(const Crc32cTimings &timings);

// Times every path in paths at every calibration size, plain and copying,
// in rounds that alternate the paths: one that warms the caches and the
// vector units and is not counted, then counted ones while the next fits
// in budget_seconds in all (at least one, whatever the budget).
Crc32cTimings time_crc32c_paths(const std::vector<Crc32cPath> &paths, double budget_seconds, unsigned &rounds);

// The choice given what KVBLOB_CRC32C_PATH holds (null or empty: unset):
// a name in paths pins that path for every op and band; any other value
// leaves a warning and falls back to measuring, as unset does. measure is
// called only when the choice is measured.
Crc32cChoice make_crc32c_choice(const std::vector<Crc32cPath> &paths, const char *pinned,
                                const std::function<Crc32cChoice()> &measure);

// This process's choice, made at first use (the first checksum, or a
// driver's open) and kept.
const Crc32cChoice &crc32c_choice();

}  // namespace kvblob::support
