// The host's admission of arbitrary batches: whatever rows, keys and spans
// the bytes describe, an admitted batch is within every declared limit and
// every span lies wholly inside a live registration; its keys are distinct.
// A batch whose caller vouched for distinct keys gets the same verdict, but
// for a repeated key.
#include <cstdint>
#include <string>
#include <vector>

#include "../../host/src/guarding/admission.hpp"

namespace {

struct Reader {
    const uint8_t *p;
    size_t n;
    uint64_t next(int bytes)
    {
        uint64_t v = 0;
        for (int i = 0; i < bytes && n; ++i, ++p, --n) v = v << 8 | *p;
        return v;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Reader in{data, size};
    kvblob_caps_t caps{sizeof caps, 0, in.next(1) & KVBLOB_CAP_KNOWN_MASK, 1 + in.next(1) % 16, 1 + in.next(1) % 4,
                       1 + in.next(1) % 64, 1 + in.next(2), 16};
    // Three live regions; handle 3 is one the host never gave out.
    kvblob::RegionRecord regions[3] = {{nullptr, 4096}, {nullptr, 100}, {nullptr, 1 + in.next(2)}};
    auto handle = [](uint64_t i) { return reinterpret_cast<kvblob_region_t *>(0x1000 * (i + 1)); };
    auto find = [&](kvblob_region_t *r) -> const kvblob::RegionRecord * {
        for (uint64_t i = 0; i < 3; ++i)
            if (r == handle(i)) return &regions[i];
        return nullptr;
    };
    const auto kind = static_cast<kvblob::OpKind>(in.next(1) % 4);
    const size_t rows = in.next(1) % 20;
    std::vector<std::string> keys(rows);
    std::vector<std::vector<kvblob_span_t>> spans(rows);
    std::vector<kvblob_row_t> row(rows);
    for (size_t r = 0; r < rows; ++r) {
        keys[r] = std::string(in.next(1) % 70, static_cast<char>('a' + in.next(1) % 3));
        const size_t count = in.next(1) % 6;
        for (size_t s = 0; s < count; ++s)
            spans[r].push_back({sizeof(kvblob_span_t), 0, handle(in.next(1) % 4), in.next(3), in.next(3)});
        row[r] = {sizeof(kvblob_row_t), static_cast<uint32_t>(spans[r].size()),
                  reinterpret_cast<const uint8_t *>(keys[r].data()), keys[r].size(),
                  spans[r].empty() ? nullptr : spans[r].data()};
    }
    const std::string hint = "h";
    const kvblob_hint_t h{sizeof h, 0, hint.data(), hint.size()};
    const kvblob_batch_t batch{sizeof batch, 0, rows ? row.data() : nullptr, rows, (in.next(1) & 1) ? &h : nullptr};

    const auto verdict = kvblob::admit(caps, kind, batch, find);
    const auto vouched = kvblob::admit(caps, kind, batch, find, true);
    if (verdict.reason.find("repeats a key") == std::string::npos) {
        if (vouched.rule != verdict.rule || vouched.reason != verdict.reason || vouched.regions != verdict.regions ||
            vouched.uniform_row_bytes != verdict.uniform_row_bytes || vouched.row_bytes != verdict.row_bytes)
            __builtin_trap();
    } else if (vouched.rule == "R-ADM-4" && vouched.reason.find("repeats a key") != std::string::npos) {
        __builtin_trap();  // vouched for: a repeat is not looked for
    }
    if (!verdict.rule.empty()) return 0;
    // Admitted: check every promise of admission independently.
    if (rows == 0 || rows > caps.max_rows_per_op) __builtin_trap();
    if (batch.hint && !(caps.flags & KVBLOB_CAP_HINTS)) __builtin_trap();
    for (size_t r = 0; r < rows; ++r) {
        if (keys[r].empty() || keys[r].size() > caps.max_key_bytes) __builtin_trap();
        for (size_t q = 0; q < r; ++q)
            if (keys[q] == keys[r]) __builtin_trap();
        const bool moves = kind == kvblob::OpKind::put || kind == kvblob::OpKind::get;
        if (!moves && !spans[r].empty()) __builtin_trap();
        if (moves && (spans[r].empty() || spans[r].size() > caps.max_spans_per_row)) __builtin_trap();
        uint64_t total = 0;
        for (const auto &s : spans[r]) {
            const auto *region = find(s.region);
            if (!region || s.length == 0 || s.offset + s.length > region->size || s.offset + s.length < s.offset)
                __builtin_trap();
            total += s.length;
        }
        if (total > caps.max_object_bytes) __builtin_trap();
    }
    return 0;
}
