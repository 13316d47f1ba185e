// results.wide: each row's own result across the whole width of an
// operation (R-ROW-1). One operation of each kind, as wide as the driver
// allows (up to wide_reach rows), whose rows' outcomes differ row by row in
// no pattern a fixed-size table would repeat, read whole and in pages.
// Then, where the driver declares more rows than that, a get (and a probe)
// of its whole declared width: the check's own keys first, then keys never
// put. Putting that many rows costs a disk-bound store minutes; reading
// them costs little, and a table of wide_reach entries or more still gives
// a row past it another row's result.
//
// What a row of each kind of key should answer is not assumed: a
// one-row operation of the same kind on a key of the same kind says it
// (that answer is judged by the data.*, scenario.* and remove.* checks).
// This check judges only that row i of a wide operation answers what a row
// like it answers alone, and that a READY get row holds its own key's bytes.
#include <array>
#include <cstring>
#include <memory>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

constexpr uint64_t wide_reach = 16384;  // the most rows this check puts in one operation
constexpr uint64_t narrow = 1024;       // a driver must allow more than this many rows
constexpr uint64_t size = 64;           // each row's bytes
// The most rows of the full-width get and probe (size bytes of destination
// each): a driver declaring more is read this wide, and the runner says so.
constexpr uint64_t full_reach = uint64_t(1) << 20;

// What a key is when the check begins. Busy keys are held by another
// writer (stage_foreign_writer), where the driver offers that hook.
// Fresh keys are the rows of the full-width operations past the check's
// own keys: never put by anything, whatever the steps before did.
enum Class : int { stored, halved, absent, busy, fresh, classes };
const std::array<const char *, classes> class_words = {
    "a key stored with the row's size", "a key stored with half the row's size", "a key never put",
    "a key another writer holds", "a key never put, past the check's own keys"};

// A key's class, from a hash of its row: no period a table of any size
// shares. One key in 8 is stored, one in 16 halved, about one in 128 busy
// (where busy keys can be staged), the rest absent: few keys written
// before the put, for a store where each write waits for its disk.
Class class_of(uint64_t i, bool busy_allowed)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    if (busy_allowed && (x & 127) == 0) return busy;
    switch ((x >> 8) % 16) {
    case 0:
    case 1: return stored;
    case 2: return halved;
    default: return absent;
    }
}

// What the bytes of a key are, as far as the check knows.
enum class Holds { nothing, old_bytes, new_bytes, other };

// Results of rows [first, first + count), read into an array one element
// longer, whose last element must be left alone.
std::vector<kvblob_row_status_t> page(Driver &d, kvblob_op_t *op, uint64_t first, uint64_t count,
                                      const std::string &what)
{
    std::vector<kvblob_row_status_t> out(count + 1);
    for (auto &r : out) r = {sizeof r, unwritten, unwritten, 0};
    const auto at = "results(first " + std::to_string(first) + ", count " + std::to_string(count) + ") of " + what;
    const kvblob_status st = d.table().results(d.handle(), op, first, count, out.data());
    expect(st == KVBLOB_OK, "R-ROW-1", at + " answered " + kvblob_status_name(st));
    expect(out[count].result == unwritten && out[count].driver_code == unwritten, "R-ROW-1",
           at + " wrote past the count it was given");
    out.pop_back();
    return out;
}

class Wide {
public:
    Wide(Context &c, Driver &d, uint64_t width, bool busy_allowed)
        : c_(c), d_(d), width_(width), old_(width * size), new_(width * size), dst_(width * size), one_(size)
    {
        for (uint64_t i = 0; i < width; ++i) {
            cls_.push_back(class_of(i, busy_allowed));
            fill_pattern(old_.data() + i * size, size, 7000 + i);
            fill_pattern(new_.data() + i * size, size, 900000 + i);
            holds_.push_back(cls_.back() == stored ? Holds::old_bytes
                             : cls_.back() == halved ? Holds::other
                                                     : Holds::nothing);
        }
        std::memset(dst_.data(), 0x5D, dst_.size());
        old_r_ = c.reg(d, old_);
        new_r_ = c.reg(d, new_);
        dst_r_ = c.reg(d, dst_);
        one_r_ = c.reg(d, one_);
    }

    // The keys of the stored and halved classes put, and the busy ones
    // staged: the state the wide operations start from. The put itself is
    // judged as the others are.
    void set_up(bool busy_allowed)
    {
        Batch put;
        std::vector<uint64_t> of;
        for (uint64_t i = 0; i < width_; ++i)
            if (cls_[i] == stored || cls_[i] == halved) {
                put.row(key(i), {make_span(old_r_, i * size, cls_[i] == halved ? size / 2 : size)});
                of.push_back(i);
            }
        known_[stored] = known_[halved] = true;
        judge(OpKind::put, put, of, "a put", [&](int side) {
            Expect alone{};
            for (Class k : {stored, halved})
                alone[k] = c_.run_one(d_, OpKind::put, cal(k, side), {make_span(old_r_, 0, k == halved ? size / 2 : size)});
            return alone;
        });
        if (busy_allowed) {
            for (int side : {0, 1}) c_.stage(d_, "stage_foreign_writer", cal(busy, side), "R-ROW-2");
            for (uint64_t i = 0; i < width_; ++i)
                if (cls_[i] == busy) c_.stage(d_, "stage_foreign_writer", key(i), "R-ROW-2");
        }
    }

    // One operation of kind over every key (remove names a key never put in
    // place of each halved one, so that its rows answer MISS too), judged
    // against what a one-row operation of kind on a key of each class
    // answers.
    void step(OpKind kind, const std::string &what)
    {
        Batch b;
        std::vector<uint64_t> of;
        const bool spans = kind == OpKind::put || kind == OpKind::get;
        if (kind == OpKind::get) std::memset(dst_.data(), 0x5D, dst_.size());
        for (uint64_t i = 0; i < width_; ++i) {
            const std::string k = kind == OpKind::remove && cls_[i] == halved ? gone(i) : key(i);
            if (!spans) b.row(k);
            else b.row(k, {make_span(kind == OpKind::put ? new_r_ : dst_r_, i * size, size)});
            of.push_back(i);
        }
        judge(kind, b, of, what, [&](int side) {
            Expect alone{};
            for (int k = 0; k < classes; ++k) {
                if (!known_[k]) continue;
                const std::string ck =
                    kind == OpKind::remove && k == halved ? c_.key("alone-gone-" + std::to_string(side)) : cal(k, side);
                std::vector<kvblob_span_t> one;
                if (spans) one.push_back(make_span(kind == OpKind::put ? new_r_ : one_r_, 0, size));
                alone[k] = c_.run_one(d_, kind, ck, one);
            }
            return alone;
        });
    }

    void know_absent() { known_[absent] = true; }
    void know_busy() { known_[busy] = true; }

    // One operation of kind (get or probe) of all rows rows: rows [0, width)
    // the check's own keys as the steps before left them, the rest keys
    // never put, each with a destination of its own in past_ (a get).
    void full(OpKind kind, uint64_t rows, const std::string &what)
    {
        if (!past_) {
            past_ = std::make_unique<GuardedBuffer>((rows - width_) * size);
            past_r_ = c_.reg(d_, *past_);
        }
        known_[fresh] = true;
        while (cls_.size() < rows) {
            cls_.push_back(fresh);
            holds_.push_back(Holds::nothing);
        }
        Batch b;
        std::vector<uint64_t> of;
        const bool spans = kind == OpKind::get;
        if (spans) {
            std::memset(dst_.data(), 0x5D, dst_.size());
            std::memset(past_->data(), 0x5D, past_->size());
        }
        for (uint64_t i = 0; i < rows; ++i) {
            const std::string k = i < width_ ? key(i) : c_.key("never" + std::to_string(i));
            if (!spans) b.row(k);
            else if (i < width_) b.row(k, {make_span(dst_r_, i * size, size)});
            else b.row(k, {make_span(past_r_, (i - width_) * size, size)});
            of.push_back(i);
        }
        judge(kind, b, of, what, [&](int side) {
            Expect alone{};
            for (int k = 0; k < classes; ++k) {
                if (!known_[k]) continue;
                std::vector<kvblob_span_t> one;
                if (spans) one.push_back(make_span(one_r_, 0, size));
                alone[k] = c_.run_one(d_, kind, cal(k, side), one);
            }
            return alone;
        });
    }

private:
    using Expect = std::array<kvblob_row_result, classes>;

    std::string key(uint64_t i) const { return c_.key("w" + std::to_string(i)); }
    std::string gone(uint64_t i) const { return c_.key("gone" + std::to_string(i)); }
    // The keys of the one-row operations, two of each class: side 0 is
    // asked before the wide operation, side 1 after it, so that a key whose
    // state the store changes with time meanwhile (another writer's claim
    // that expires) may answer either way.
    std::string cal(int k, int side) const
    {
        return c_.key("alone-" + std::to_string(k) + "-" + std::to_string(side));
    }

    // Runs b, whose row r is key of[r], reads it whole and in pages, and
    // judges every row against what a row of its class answers alone
    // (alone(side), asked before and after).
    template <class Alone>
    void judge(OpKind kind, Batch &b, const std::vector<uint64_t> &of, const std::string &what, Alone &&alone)
    {
        const uint64_t rows = b.size();
        const std::string op_words = what + " of " + std::to_string(rows) + " rows";
        const Expect before = alone(0);
        kvblob_op_t *op = c_.admit(d_, kind, b);
        expect(c_.settle(d_, op), "R-ACC-2",
               op_words + " was not final with access ended within " + std::to_string(c_.op_timeout.count()) + " ms");
        const auto all = page(d_, op, 0, rows, op_words);
        // Pages of sizes that share no period with a power of two, and with
        // one; then single rows at the edges of 1024-row blocks.
        for (uint64_t count : {1000ull, 1024ull, 4099ull})
            for (uint64_t first = 0; first < rows; first += count)
                agree(op, all, first, std::min(count, rows - first), op_words);
        for (uint64_t r : {uint64_t(0), narrow - 1, narrow, narrow + 1, wide_reach - 1, wide_reach, wide_reach + 1,
                           rows / 2, rows - 1})
            if (r < rows) agree(op, all, r, 1, op_words);
        expect(d_.table().release(d_.handle(), op) == KVBLOB_OK, "R-OPS-1",
               "release refused for " + op_words + ", final with access ended");
        const Expect after = alone(1);
        for (uint64_t r = 0; r < rows; ++r) {
            const uint64_t i = of[r];
            const Class k = cls_[i];
            const auto got = all[r].result;
            const std::string row = "row " + std::to_string(r) + " of " + op_words + " (" + class_words[k] + ")";
            const std::string alone_words = before[k] == after[k] ? kvblob_row_result_name(before[k])
                                                                  : std::string(kvblob_row_result_name(before[k])) +
                                                                        " before it and " +
                                                                        kvblob_row_result_name(after[k]) + " after";
            expect(got == before[k] || got == after[k], "R-ROW-1",
                   row + " answered " + kvblob_row_result_name(got) + ", where a " + to_string(kind) +
                       " of one such row answers " + alone_words +
                       ": each row has its own result, whatever the operation's width");
            if (kind == OpKind::get) judge_bytes(r, i, got, row);
        }
        // What the store holds now, for the gets after this.
        for (uint64_t r = 0; r < rows; ++r) {
            const uint64_t i = of[r];
            if (all[r].result != KVBLOB_ROW_READY) continue;
            if (kind == OpKind::remove && cls_[i] != halved) holds_[i] = Holds::nothing;
            if (kind == OpKind::put && holds_[i] == Holds::nothing) holds_[i] = Holds::new_bytes;
        }
    }

    // A READY get row holds its own key's bytes; a MISS row left its
    // destination as it was.
    void judge_bytes(uint64_t r, uint64_t i, kvblob_row_result got, const std::string &row)
    {
        const uint8_t *at = r < width_ ? dst_.data() + r * size : past_->data() + (r - width_) * size;
        if (got == KVBLOB_ROW_READY && (holds_[i] == Holds::old_bytes || holds_[i] == Holds::new_bytes)) {
            const uint8_t *want = (holds_[i] == Holds::old_bytes ? old_ : new_).data() + i * size;
            expect(std::memcmp(at, want, size) == 0, "R-ROW-1",
                   row + " is READY and holds other bytes than its key's object (another row's?)");
        }
        if (got == KVBLOB_ROW_MISS)
            for (uint64_t b = 0; b < size; ++b)
                expect(at[b] == 0x5D, "R-ROW-3", row + " is MISS and its destination was written");
    }

    // results(first, count) gives each row what the whole read gave it.
    void agree(kvblob_op_t *op, const std::vector<kvblob_row_status_t> &all, uint64_t first, uint64_t count,
               const std::string &op_words)
    {
        const auto part = page(d_, op, first, count, op_words);
        for (uint64_t j = 0; j < count; ++j)
            expect(part[j].result == all[first + j].result && part[j].driver_code == all[first + j].driver_code,
                   "R-ROW-1",
                   "results(first " + std::to_string(first) + ", count " + std::to_string(count) + ") of " +
                       op_words + " gives row " + std::to_string(first + j) + " " +
                       kvblob_row_result_name(part[j].result) + ", where a read of all rows gives it " +
                       kvblob_row_result_name(all[first + j].result));
    }

    Context &c_;
    Driver &d_;
    uint64_t width_;
    GuardedBuffer old_, new_, dst_, one_;
    std::unique_ptr<GuardedBuffer> past_;  // the full-width get's destinations past width_
    kvblob_region_t *old_r_ = nullptr, *new_r_ = nullptr, *dst_r_ = nullptr, *one_r_ = nullptr, *past_r_ = nullptr;
    std::vector<Class> cls_;
    std::vector<Holds> holds_;
    std::array<bool, classes> known_{};
};

void results_wide(Context &c)
{
    auto d = c.open();
    const uint64_t declared = d.caps().max_rows_per_op;
    if (declared <= narrow)
        throw NotSupported("max_rows_per_op is " + std::to_string(declared) + "; this check needs more than " +
                           std::to_string(narrow) + " rows in one operation");
    const uint64_t width = std::min(declared, wide_reach);
    if (width < declared) c.note("operations of " + std::to_string(width) + " rows, the most this check puts in one");
    const auto hooks = offer_of(d).hooks;
    const bool busy_allowed = hooks.count("stage_foreign_writer") && hooks.count("release_staged");
    Wide w(c, d, width, busy_allowed);
    w.set_up(busy_allowed);
    w.know_absent();
    if (busy_allowed) w.know_busy();
    // The remove last: it takes away what the put stored (but the halved
    // keys, whose rows name keys never put instead), so that the cleanup
    // has little left to do.
    w.step(OpKind::get, "a get");
    if (d.has(KVBLOB_CAP_PROBE)) w.step(OpKind::probe, "a probe");
    w.step(OpKind::put, "a put");
    w.step(OpKind::get, "a get after that put");
    // The full width before the remove, while the check's keys still differ
    // row by row (READY, FAULT, MISS) from the never-put keys past them.
    if (width < declared) {
        const uint64_t full = std::min(declared, full_reach);
        if (full < declared)
            c.note("the full-width get and probe of " + std::to_string(full) + " rows, the most this check reads in one");
        w.full(OpKind::get, full, "a get of the full width");
        if (d.has(KVBLOB_CAP_PROBE)) w.full(OpKind::probe, full, "a probe of the full width");
    }
    if (d.has(KVBLOB_CAP_REMOVE)) w.step(OpKind::remove, "a remove");
}

}  // namespace

// The checks of this file, in run order.
void add_results_wide_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"results.wide", {"R-ROW-1"}, Level::must, 0, {},
         "a get, probe, put and remove of more than 1024 rows (as many as max_rows_per_op allows, up to 16384) "
         "whose outcomes differ row by row give every row the result a row like it gets alone, read whole and "
         "in pages; where max_rows_per_op is larger, so does a get and probe of that many rows (up to 1048576) "
         "whose rows past the 16384 name keys never put",
         results_wide},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
