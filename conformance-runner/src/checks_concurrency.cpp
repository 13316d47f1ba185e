// R-CON-2 and R-ROW-8 across drivers: two puts of one key in flight at once
// from two drivers on one store, while a third driver reads the key. No
// reader may see bytes of both writers, or READY for a half-copied object.
// R-CON-1 inside admission: one call held halfway through reading its batch
// while another thread's call of the same keys is admitted (checks_held.cpp).
#include <atomic>
#include <barrier>
#include <cstring>

#include "checks_common.hpp"
#include "checks_held.hpp"

namespace kvblob::conformance {

namespace {

void concurrency_one_key_two_drivers(Context &c)
{
    constexpr uint64_t size = 64 * 1024;
    constexpr int rounds = 40;
    auto a = c.open(), b = c.open(), reader = c.open();
    // A get before either put ends reads the key absent.
    c.require_absent_not_ready(reader, "a READY get read a writer's object");
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

// The checks of this file, in run order.
void add_concurrency_checks(std::vector<Check> &out)
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
