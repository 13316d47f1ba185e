// concurrency.*: R-CON-1..3 with threads, two drivers and a get held inside
// the store (concurrency.threads, two-drivers, held-get); and
// R-CON-2 and R-ROW-8 across drivers: two puts of one key in flight at once
// from two drivers on one store, while a third driver reads the key. No
// reader may see bytes of both writers, or READY for a half-copied object.
// R-CON-1 inside admission: one call held halfway through reading its batch
// while another thread's call of the same keys is admitted (held_calls.cpp).
#include <atomic>
#include <barrier>
#include <cstring>

#include "common.hpp"
#include "held_calls.hpp"

namespace kvblob::conformance {

namespace {

// concurrency.threads, its first part: eight writers and two readers on
// shared keys; no READY get holds torn bytes (R-CON-2).
void racing_writers_and_readers(Context &c, Driver &d)
{
    std::atomic<int> torn{0}, other{0}, writers{8};
    // Each writer's 200 rounds, or as many as an eighth of the
    // check's time allows (at least 20): a store that takes a
    // while per operation still ends in time.
    const auto rounds_end = std::chrono::steady_clock::now() + c.op_timeout / 8;
    CheckThreads(10, [&](int t) {
        GuardedBuffer src(2048), dst(2048);
        auto rs = c.reg(d, src), rd = c.reg(d, dst);
        if (t >= 8) {
            // Two readers of the shared keys for as long as the writers
            // run, each starting on a different key: a window in which
            // an object is seen unfinished is short, and one reader on
            // a busy machine met none in one run of many.
            for (int n = 2 * (t - 8); writers.load() > 0; ++n) {
                const int key = 1 + 2 * (n % 4);
                auto get = c.run_one(d, OpKind::get, c.key(std::to_string(key)), {make_span(rd, 0, 2048)});
                fill_pattern(src.data(), 2048, key);
                if (get == KVBLOB_ROW_READY && std::memcmp(src.data(), dst.data(), 2048) != 0) ++torn;
                if (get != KVBLOB_ROW_READY && get != KVBLOB_ROW_NOT_READY && get != KVBLOB_ROW_MISS)
                    ++other;
            }
            c.unreg(d, rs), c.unreg(d, rd);
            return;
        }
        struct Done {
            std::atomic<int> &left;
            ~Done() { --left; }
        } done{writers};
        // Unregistered before the buffers go: a later phase may get their addresses.
        struct Unreg {
            Context &c;
            Driver &d;
            kvblob_region_t *a, *b;
            ~Unreg() { c.unreg(d, a), c.unreg(d, b); }
        } unreg{c, d, rs, rd};
        for (int i = 0; i < 200 && (i < 20 || std::chrono::steady_clock::now() < rounds_end); ++i) {
            const int key = (i % 2) ? i % 8 : 100 * (t + 1) + i;
            fill_pattern(src.data(), 2048, key);
            auto put = c.run_one(d, OpKind::put, c.key(std::to_string(key)), {make_span(rs, 0, 2048)});
            if (put != KVBLOB_ROW_READY && put != KVBLOB_ROW_NOT_READY) ++other;
            auto get = c.run_one(d, OpKind::get, c.key(std::to_string(key)), {make_span(rd, 0, 2048)});
            if (get == KVBLOB_ROW_READY && std::memcmp(src.data(), dst.data(), 2048) != 0) ++torn;
            // A reader racing a writer sees the whole object, NOT_READY or MISS.
            if (get != KVBLOB_ROW_READY && get != KVBLOB_ROW_NOT_READY && get != KVBLOB_ROW_MISS) ++other;
        }
    }).join();
    expect(other == 0, "R-CON-2",
           std::to_string(other.load()) + " puts or gets racing on a key answered neither READY, "
                                          "NOT_READY nor MISS");
    // The readers may ask for a key before any writer put it: a READY there
    // is a whole object only where a get of a key never put is not READY.
    // Asked every run, so that a driver whose absent keys read READY is
    // BLOCKED here always, not only when the race went that way.
    c.require_absent_not_ready(d, "a READY get read a whole object written by a writer");
    expect(torn == 0, "R-CON-2", std::to_string(torn.load()) + " READY gets held wrong bytes");
}

// Its second part: batches of the same keys from four threads at once are
// each admitted (R-CON-1).
void same_keys_from_every_thread(Context &c, Driver &d)
{
    // Batches of the same keys from every thread at once: equal keys in
    // different operations are no duplicates (R-ADM-4 is per operation),
    // however their admissions interleave. Each round starts on every
    // thread together, and a batch is long enough (256 rows, or the
    // driver's limit) that the admissions overlap even when a busy
    // machine wakes threads late.
    const int same_rows = static_cast<int>(std::min<uint64_t>(256, d.caps().max_rows_per_op));
    // 50 rounds, or as many as an eighth of the check's time allows (at
    // least 10), decided once per round as the last thread arrives, so
    // every thread runs as many.
    const auto same_end = std::chrono::steady_clock::now() + c.op_timeout / 8;
    int same_round = 0;
    bool more = true;
    std::barrier together(4, [&]() noexcept {
        more = same_round < 50 && (same_round < 10 || std::chrono::steady_clock::now() < same_end);
        ++same_round;
    });
    CheckThreads(4, [&](int t) {
        try {
            GuardedBuffer src(same_rows * 256);
            fill_pattern(src.data(), src.size(), 99);
            auto rs = c.reg(d, src);
            Batch b;  // made before the start, so that the threads go straight to submit
            for (int i = 0; i < same_rows; ++i)
                b.row(c.key("same/" + std::to_string(i)), {make_span(rs, i * 256, 256)});
            for (;;) {
                together.arrive_and_wait();
                if (!more) break;
                kvblob_status st = KVBLOB_OK;
                std::string why;
                auto *op = c.submit(d, OpKind::put, b, &st, &why);
                expect(op != nullptr, "R-CON-1",
                       "thread " + std::to_string(t) + ": a put of keys other threads also put "
                       "was refused: " + kvblob_status_name(st) + " " + why);
                expect(c.settle(d, op), "R-ACC-2", "put did not settle");
                expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
            }
            c.unreg(d, rs);
        } catch (...) {
            together.arrive_and_drop();  // the others go on without this thread
            throw;
        }
    }).join();
}

// Its third part: an operation submitted on one thread is polled, read and
// released on another (R-CON-1).
void handed_between_threads(Context &c, Driver &d)
{
    GuardedBuffer buf(4096);
    auto r = c.reg(d, buf);
    Batch b;
    b.row(c.key("handed"), {make_span(r, 0, 4096)});
    kvblob_op_t *op = c.admit(d, OpKind::put, b);
    CheckThreads(1, [&](int) {
        uint32_t fin = 0;
        kvblob_status st = d.table().poll(d.handle(), op, &fin);
        expect(st == KVBLOB_OK, "R-CON-1",
               std::string("poll from a thread other than the submitter's answered ") +
                   kvblob_status_name(st));
        expect(c.settle(d, op), "R-ACC-2", "put did not settle");
        expect(c.results(d, op, 1)[0].result == KVBLOB_ROW_READY, "R-CON-1",
               "a put read from another thread is not READY");
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-CON-1",
               "release from a thread other than the submitter's was refused");
    }).join();
}

void concurrency_threads(Context &c)
{
    get_during_held_put(c);  // every run, whatever the timing
    auto d = c.open();
    racing_writers_and_readers(c, d);
    same_keys_from_every_thread(c, d);
    handed_between_threads(c, d);
}

void concurrency_two_drivers(Context &c)
{
    auto a = c.open();
    auto b = c.open();
    c.require_round_trip(a, 16384, "the second driver does not see the first driver's object");
    GuardedBuffer src(16384), dst(16384);
    fill_pattern(src.data(), src.size(), 77);
    auto rs = c.reg(a, src);
    auto rd = c.reg(b, dst);
    auto k = c.key("shared");
    expect(c.run_one(a, OpKind::put, k, {make_span(rs, 0, 16384)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    auto res = c.run_one(b, OpKind::get, k, {make_span(rd, 0, 16384)});
    expect(res == KVBLOB_ROW_READY, "R-CON-2",
           std::string("the second driver's get is ") + kvblob_row_result_name(res));
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-CON-2", "bytes differ");
}

void concurrency_held_get(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(8192);
    auto r = c.reg(d, buf);
    auto k = c.key("held"), free = c.key("free");
    c.run_one(d, OpKind::put, k, {make_span(r, 0, 4096)});
    c.run_one(d, OpKind::put, free, {make_span(r, 4096, 4096)});
    c.stage(d, "stage_held_get", k, "R-CON-3");
    Batch b;
    b.row(k, {make_span(r, 0, 4096)});
    auto op = c.admit(d, OpKind::get, b);
    auto t0 = std::chrono::steady_clock::now();
    expect(c.run_one(d, OpKind::get, free, {make_span(r, 4096, 4096)}) == KVBLOB_ROW_READY,
           "R-CON-3", "another get did not complete while one was held");
    d.table().drain(d.handle(), 100'000'000ull);
    expect(std::chrono::steady_clock::now() - t0 < 3s, "R-CON-3",
           "a held get delayed another operation or a drain with a 100 ms timeout");
    c.stage(d, "release_staged", "R-CON-3");
    expect(c.settle(d, op), "R-ACC-2", "the held get did not settle once released");
}

void concurrency_one_key_two_drivers(Context &c)
{
    constexpr uint64_t size = 64 * 1024;
    constexpr int rounds = 40;
    auto a = c.open(), b = c.open(), reader = c.open();
    // A get before either put ends reads the key absent.
    c.require_absent_not_ready(reader, "a READY get read a writer's object");
    c.require_round_trip(reader, size, "a get racing two puts of its key read neither whole object");
    GuardedBuffer sa(size), sb(size), dr(size), df(size);
    fill_pattern(sa.data(), size, 51);
    fill_pattern(sb.data(), size, 52);
    auto ra = c.reg(a, sa), rb = c.reg(b, sb), rr = c.reg(reader, dr), rf = c.reg(reader, df);
    auto whole = [&](const uint8_t *bytes) {
        return std::memcmp(bytes, sa.data(), size) == 0 || std::memcmp(bytes, sb.data(), size) == 0;
    };
    std::atomic<int> writing{0};
    std::barrier start(3);
    kvblob_row_result put_a = KVBLOB_ROW_PENDING, put_b = KVBLOB_ROW_PENDING;
    std::atomic<int> torn{0}, wrong{0}, reads{0};
    std::string wrong_what;
    std::mutex wrong_mu;
    // Every round, or as many as an eighth of the check's time
    // allows (at least 8): a store that takes a while per
    // operation still ends in time.
    const auto rounds_end = std::chrono::steady_clock::now() + c.op_timeout / 8;
    int round = 0;
    for (; round < rounds && (round < 8 || std::chrono::steady_clock::now() < rounds_end); ++round) {
        const auto k = c.key(std::to_string(round));
        writing = 2;
        CheckThreads(3, [&](int t) {
            start.arrive_and_wait();
            if (t == 0 || t == 1) {
                Driver &d = t == 0 ? a : b;
                auto res = c.run_one(d, OpKind::put, k, {make_span(t == 0 ? ra : rb, 0, size)});
                (t == 0 ? put_a : put_b) = res;
                --writing;
                return;
            }
            // Reads while either put is in flight, and once more after both.
            for (bool last = false; !last;) {
                last = writing.load() == 0;
                auto res = c.run_one(reader, OpKind::get, k, {make_span(rr, 0, size)});
                ++reads;
                if (res == KVBLOB_ROW_READY && !whole(dr.data())) ++torn;
                if (res != KVBLOB_ROW_READY && res != KVBLOB_ROW_NOT_READY &&
                    res != KVBLOB_ROW_MISS) {
                    ++wrong;
                    std::lock_guard lock(wrong_mu);
                    wrong_what = std::string("a get racing two puts of its key is ") +
                                 kvblob_row_result_name(res);
                }
            }
        }).join();
        expect(torn == 0, "R-CON-2",
               std::to_string(torn.load()) + " READY get(s) held bytes of neither writer's whole "
                                             "object (interleaved or half-copied)");
        expect(wrong == 0, "R-CON-2", wrong_what);
        for (auto res : {put_a, put_b})
            expect(res == KVBLOB_ROW_READY || res == KVBLOB_ROW_NOT_READY ||
                       res == KVBLOB_ROW_DECLINED,
                   "R-CON-2",
                   std::string("a put racing another put of its key is ") +
                       kvblob_row_result_name(res));
        // Once both are final: what is stored is one writer's object, whole.
        auto res = c.run_one(reader, OpKind::get, k, {make_span(rf, 0, size)});
        if (put_a == KVBLOB_ROW_READY || put_b == KVBLOB_ROW_READY)
            expect(res == KVBLOB_ROW_READY, "R-CON-2",
                   std::string("a put answered READY, and a later get from another driver is ") +
                       kvblob_row_result_name(res));
        expect(res != KVBLOB_ROW_READY || whole(df.data()), "R-ROW-8",
               "after two puts of one key, the stored object is neither writer's whole object");
    }
    c.note(std::to_string(reads.load()) + " gets raced " + std::to_string(2 * round) + " puts");
}

}  // namespace

// Threads, two drivers and a held get, run after the lifetime checks (battery.cpp).
void add_concurrency_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"concurrency.threads", {"R-CON-1", "R-CON-2"}, Level::must, 0, {},
         "8 threads put and get equal and distinct keys while two more read the shared ones; no READY get holds "
         "wrong bytes; batches of equal keys from several threads; an operation handed between threads",
         concurrency_threads},
        {"concurrency.two-drivers", {"R-CON-2"}, Level::must, 0, {},
         "two drivers on one store: what one puts the other gets, whole",
         concurrency_two_drivers},
        {"concurrency.held-get", {"R-CON-3"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "a get held inside the store delays neither another operation nor a drain with a timeout",
         concurrency_held_get},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

// Races on the same keys, run after the cancel checks (battery.cpp).
void add_concurrency_race_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"concurrency.admission-held", {"R-CON-1"}, Level::must, 0, {},
         "a put held halfway through reading its batch while another thread puts the same keys: both "
         "are admitted",
         admission_held_midway},
        {"concurrency.one-key-two-drivers", {"R-CON-2", "R-ROW-8"}, Level::must, 0, {},
         "two drivers put one key at once while a third gets it: every READY holds one writer's "
         "object whole, nothing else but NOT_READY or MISS is seen",
         concurrency_one_key_two_drivers},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
