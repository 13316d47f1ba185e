// R-CON-2 and R-ROW-8 across drivers: two puts of one key in flight at once
// from two drivers on one store, while a third driver reads the key. No
// reader may see bytes of both writers, or READY for a half-copied object.
// R-CON-1 inside admission: one call held halfway through reading its batch
// while another thread's call of the same keys is admitted.
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstring>
#include <optional>

#include "checks_common.hpp"
#include "paused_page.hpp"

namespace kvblob::conformance {

namespace {

// A put of rows keys is held at row `rows / 2` (its key sits on a PausedPage,
// so the driver stops there when it reads it), and while it is held a second
// thread puts the same keys. Equal keys in different operations are no
// duplicates (R-ADM-4 is per operation): both calls are admitted. A driver
// whose admission keeps state shared by every call (a duplicate set, a
// scratch buffer) is caught here every time, not only when two threads
// happen to meet in a window.
void admission_held_midway(Context &c)
{
    PausedPage page;
    if (!page.ready())
        throw NotSupported("this machine cannot hold a call inside its batch (" + page.why() +
                           "): the runner's limit, not the driver's");
    auto d = c.open();
    constexpr uint64_t rows = 64, held_row = rows / 2, row_bytes = 64;
    GuardedBuffer src(rows * row_bytes);
    fill_pattern(src.data(), src.size(), 81);
    auto region = c.reg(d, src);
    auto batch_of = [&](Batch &b) {
        for (uint64_t i = 0; i < rows; ++i)
            b.row(c.key("held/" + std::to_string(i)), {make_span(region, i * row_bytes, row_bytes)});
    };
    Batch held, other;
    batch_of(held);
    batch_of(other);
    kvblob_batch_t raw = held.get();
    c.wrote(raw);  // before its key moves onto the page: reading it there would hold this thread
    std::vector<kvblob_row_t> rows_copy(raw.rows, raw.rows + raw.row_count);
    const std::string held_key(reinterpret_cast<const char *>(rows_copy[held_row].key), rows_copy[held_row].key_len);
    if (held_key.size() > PausedPage::size()) throw NotSupported("the check's key does not fit on one page");
    rows_copy[held_row].key = page.data();
    raw.rows = rows_copy.data();

    // Nothing below may throw until the page is released: the held thread
    // waits on it, and the threads' destructor would wait on that thread.
    kvblob_status held_status = KVBLOB_OK;
    kvblob_op_t *held_op = nullptr;
    std::string held_why;
    CheckThreads holder(1, [&](int) {
        char err[512] = "";
        held_status = d.table().put(d.handle(), &raw, &held_op, err, sizeof err);
        held_why = err;
    });
    const bool touched = page.wait_for_touch(c.op_timeout / 4);

    kvblob_status other_status = KVBLOB_OK;
    std::string other_why;
    kvblob_op_t *other_op = nullptr;
    bool other_returned = false;
    std::mutex mu;
    std::condition_variable returned;
    std::optional<CheckThreads> second;
    if (touched) {
        second.emplace(1, [&](int) {
            auto *op = c.submit(d, OpKind::put, other, &other_status, &other_why);
            std::lock_guard lock(mu);
            other_op = op;
            other_returned = true;
            returned.notify_all();
        });
        // A driver that admits one call at a time holds the second call
        // behind the first: then the interleaving cannot be tried, and the
        // wait ends after its bound instead.
        std::unique_lock lock(mu);
        returned.wait_for(lock, c.op_timeout / 4, [&] { return other_returned; });
    }
    bool other_done;
    {
        std::lock_guard lock(mu);
        other_done = other_returned;
    }
    page.release(held_key.data(), held_key.size());
    holder.join();
    if (second) second->join();

    if (!touched)
        c.note("the put read no key of its batch in user space while admitting it: nothing to hold");
    else if (!other_done)
        c.note("the second put waited for the held one: admissions run one at a time, nothing to interleave");
    expect(held_op != nullptr, "R-CON-1",
           "a put held while reading its batch was refused once another thread's put of the same keys was "
           "admitted: it answered " + std::string(kvblob_status_name(held_status)) + " (" + held_why +
               "); equal keys in different operations are no duplicates (R-ADM-4), whatever the order of "
               "their admissions");
    expect(other_op != nullptr, "R-CON-1",
           "a put of keys another thread's held put also names was refused: " +
               std::string(kvblob_status_name(other_status)) + " " + other_why);
    for (auto *op : {held_op, other_op}) {
        if (!op) continue;
        expect(c.settle(d, op), "R-ACC-2", "an admitted put did not settle");
        d.table().release(d.handle(), op);
    }
    c.unreg(d, region);
}

}  // namespace

void add_concurrency_checks(std::vector<Check> &out)
{
    out.push_back({"concurrency.admission-held", {"R-CON-1"}, Level::must, 0, {},
                   "a put held halfway through reading its batch while another thread puts the same keys: both "
                   "are admitted",
                   admission_held_midway});
    out.push_back({"concurrency.one-key-two-drivers", {"R-CON-2", "R-ROW-8"}, Level::must, 0, {},
                   "two drivers put one key at once while a third gets it: every READY holds one writer's "
                   "object whole, nothing else but NOT_READY or MISS is seen",
                   [](Context &c) {
                       constexpr uint64_t size = 64 * 1024;
                       constexpr int rounds = 40;
                       auto a = c.open(), b = c.open(), reader = c.open();
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
                   }});
}

}  // namespace kvblob::conformance
