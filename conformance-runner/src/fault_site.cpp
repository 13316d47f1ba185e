#include "fault_site.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "guarded_buffer.hpp"

namespace kvblob::conformance {

namespace {

// The latest spans handed out: a fault is read against what the driver was
// given last, and a check hands out at most some ten thousand rows at once.
constexpr size_t kept_spans = 1 << 16;

struct Noted {
    std::mutex mu;
    std::map<const kvblob_region_t *, uintptr_t> bases;  // what each region handle covers
    std::vector<SpanNote> spans;  // a ring once full
    size_t next = 0;  // where the next note goes
};
Noted &noted()
{
    static Noted n;
    return n;
}

// Spans noted so far; a span noted after the fault is no part of it.
std::atomic<uint64_t> spans_noted{0};
// The first fault, and what the handler saw then: the guarded mapping it lay
// in (the buffer may be gone once the check ends) and how many spans had
// been noted.
std::atomic<uintptr_t> fault_addr{0}, fault_map_start{0}, fault_map_end{0};
std::atomic<uint64_t> fault_spans_noted{0};
std::atomic<int> fault_write{-1};

}  // namespace

void note_region(const kvblob_region_t *region, const void *base)
{
    Noted &n = noted();
    std::lock_guard lock(n.mu);
    n.bases[region] = reinterpret_cast<uintptr_t>(base);
}

void note_spans(OpKind kind, const kvblob_batch_t &batch)
{
    if ((kind != OpKind::put && kind != OpKind::get) || !batch.rows) return;
    Noted &n = noted();
    std::lock_guard lock(n.mu);
    for (uint64_t row = 0; row < batch.row_count; ++row)
        for (uint32_t i = 0; i < batch.rows[row].span_count && batch.rows[row].spans; ++i) {
            const kvblob_span_t &s = batch.rows[row].spans[i];
            const auto base = n.bases.find(s.region);
            if (base == n.bases.end()) continue;
            const SpanNote note{kind, row, base->second + s.offset, s.length, spans_noted.fetch_add(1)};
            if (n.spans.size() < kept_spans) n.spans.push_back(note);
            else n.spans[n.next % kept_spans] = note;
            n.next = (n.next + 1) % kept_spans;
        }
}

void note_guarded_fault(const void *addr, int write)
{
    uintptr_t none = 0, start = 0, end = 0;
    if (!fault_addr.compare_exchange_strong(none, reinterpret_cast<uintptr_t>(addr))) return;
    fault_write.store(write);
    fault_spans_noted.store(spans_noted.load());
    if (guarded_mapping_of(addr, &start, &end)) fault_map_start.store(start), fault_map_end.store(end);
}

std::string fault_site_text(uintptr_t addr, int write, const SpanNote &span)
{
    const std::string op = std::string(to_string(span.kind)) + " row " + std::to_string(span.row);
    const std::string did = write == 1 ? "wrote" : write == 0 ? "read" : "touched";
    const std::string of = " of its " + std::to_string(span.length) + "-byte span";
    const uintptr_t end = span.start + span.length;
    if (addr >= end)
        return "[R-REG-3] " + op + ": the driver " + did + " the byte at offset " +
               std::to_string(addr - span.start) + of + ", " + std::to_string(addr - end + 1) +
               " past its end (guarded memory)";
    if (addr < span.start)
        return "[R-REG-3] " + op + ": the driver " + did + " the byte " + std::to_string(span.start - addr) +
               " before the start" + of + " (guarded memory)";
    return "[R-REG-3] " + op + ": the driver " + did + " the byte at offset " + std::to_string(addr - span.start) + of +
           " after its access ended";
}

std::string first_fault_text()
{
    const uintptr_t addr = fault_addr.load();
    if (!addr) return {};
    const uintptr_t map_start = fault_map_start.load(), map_end = fault_map_end.load();
    const uint64_t before = fault_spans_noted.load();
    Noted &n = noted();
    std::lock_guard lock(n.mu);
    // The span that holds addr, else the nearest that ends at or before it,
    // else the nearest that starts after it, in the same mapping; the latest
    // noted wins a tie (the newest operation on that memory).
    const SpanNote *best = nullptr;
    auto distance = [&](const SpanNote &s) -> uintptr_t {
        if (addr >= s.start && addr < s.start + s.length) return 0;
        return addr >= s.start + s.length ? addr - (s.start + s.length) + 1 : s.start - addr;
    };
    for (size_t k = 0; k < n.spans.size(); ++k) {
        const SpanNote &s = n.spans[(n.next + n.spans.size() - 1 - k) % n.spans.size()];
        if (s.seq >= before || s.start < map_start || s.start + s.length > map_end) continue;
        if (!best || distance(s) < distance(*best)) best = &s;
    }
    return best ? fault_site_text(addr, fault_write.load(), *best) : std::string{};
}

}  // namespace kvblob::conformance
