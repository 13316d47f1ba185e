#include "held_calls.hpp"

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "access_wait.hpp"
#include "checks/common.hpp"
#include "paused_page.hpp"

namespace kvblob::conformance {

namespace {

// A call made on a thread of its own, which the check can wait for with a
// bound (it may be held on a PausedPage, or wait behind a held call). Joined
// when it goes: release every page it may wait on before then. The body
// must not throw.
class CallOnThread {
public:
    explicit CallOnThread(std::function<void()> body)
        : thread_([this, body = std::move(body)] {
              body();
              std::lock_guard lock(mu_);
              done_ = true;
              cv_.notify_all();
          })
    {
    }
    ~CallOnThread() { thread_.join(); }
    CallOnThread(const CallOnThread &) = delete;
    CallOnThread &operator=(const CallOnThread &) = delete;

    // True once the call returned; false when it had not within timeout.
    bool wait_for(std::chrono::milliseconds timeout)
    {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return done_; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// Thrown-free answer of one call through the driver's table.
struct Answer {
    kvblob_status status = KVBLOB_OK;
    kvblob_op_t *op = nullptr;
    std::string why;
};

Answer call(Driver &d, OpKind kind, const kvblob_batch_t &batch)
{
    Answer a;
    char err[512] = "";
    a.status = (kind == OpKind::put ? d.table().put : d.table().get)(d.handle(), &batch, &a.op, err, sizeof err);
    err[sizeof err - 1] = '\0';
    a.why = err;
    return a;
}

// A batch whose row `held_row` has its key on page (the key's bytes are
// handed back, for release); the rest of the batch stays where it was.
struct BatchWithHeldKey {
    kvblob_batch_t raw;
    std::vector<kvblob_row_t> rows;
    std::string held_key;
};

BatchWithHeldKey hold_key(const kvblob_batch_t &batch, uint64_t held_row, PausedPage &page)
{
    BatchWithHeldKey h{batch, std::vector<kvblob_row_t>(batch.rows, batch.rows + batch.row_count), {}};
    h.held_key.assign(reinterpret_cast<const char *>(h.rows[held_row].key), h.rows[held_row].key_len);
    if (h.held_key.size() > PausedPage::size()) throw RunnerCannot("the check's key does not fit on one page");
    h.rows[held_row].key = page.data();
    h.raw.rows = h.rows.data();
    return h;
}

// The page, armed; NotSupported (the runner's limit) where this machine has
// no userfaultfd.
void arm_or_skip(PausedPage &page)
{
    if (!page.ready() || !page.arm())
        throw RunnerCannot("this machine cannot hold a call inside the driver (" + page.why() + ")");
}

// How long a check waits for what a held call makes visible (a second call's
// return, a drain's answer): a driver that waits behind the held call costs
// this much, and a wrong early answer comes long before it.
std::chrono::milliseconds hold_bound(const Context &c)
{
    return std::min<std::chrono::milliseconds>(c.op_timeout / 8, std::chrono::seconds(2));
}

void settle_and_release(Context &c, Driver &d, kvblob_op_t *op, const char *what)
{
    if (!op) return;
    expect(c.settle(d, op), "R-ACC-2", std::string("an admitted ") + what + " did not settle");
    d.table().release(d.handle(), op);
}

}  // namespace

void admission_held_midway(Context &c)
{
    PausedPage page;
    arm_or_skip(page);
    auto d = c.open();
    constexpr uint64_t rows = 64, held_row = rows / 2, row_bytes = 64;
    GuardedBuffer src(rows * row_bytes);
    fill_pattern(src.data(), src.size(), 81);
    auto region = c.reg(d, src);
    auto batch_of = [&](Batch &b) {
        for (uint64_t i = 0; i < rows; ++i)
            b.row(c.key("held/" + std::to_string(i)), {make_span(region, i * row_bytes, row_bytes)});
    };
    Batch first, second;
    batch_of(first);
    batch_of(second);
    c.wrote(first.get());  // before its key moves onto the page: reading it there would hold this thread
    auto held = hold_key(first.get(), held_row, page);
    const auto &second_raw = second.get();
    c.wrote(second_raw);

    Answer held_answer, second_answer;
    bool touched = false, second_returned = false;
    {
        CallOnThread holder([&] { held_answer = call(d, OpKind::put, held.raw); });
        touched = page.wait_for_touch(c.op_timeout / 4);
        if (touched) {
            // A driver that admits one call at a time keeps the second behind
            // the held one: then there is nothing to interleave, and the wait
            // ends at its bound.
            CallOnThread other([&] { second_answer = call(d, OpKind::put, second_raw); });
            second_returned = other.wait_for(hold_bound(c));
            page.release(held.held_key.data(), held.held_key.size());
        } else {
            page.release(held.held_key.data(), held.held_key.size());
        }
    }
    if (!touched)
        c.not_exercised("the put read no key of its batch while it was called (row " + std::to_string(held_row) +
                        "'s key, on a page that held no bytes until the check stopped waiting): no put was held "
                        "inside the driver, so nothing showed whether another thread's put of the same keys is "
                        "admitted meanwhile");
    else if (!second_returned)
        c.note("the second put waited for the held one: admissions run one at a time, nothing to interleave");
    expect(held_answer.status == KVBLOB_OK, "R-CON-1",
           "a put held while reading its batch was refused once another thread's put of the same keys was "
           "admitted: it answered " + std::string(kvblob_status_name(held_answer.status)) + " (" + held_answer.why +
               "); equal keys in different operations are no duplicates (R-ADM-4), whatever the order of their "
               "admissions");
    expect(!touched || second_answer.status == KVBLOB_OK, "R-CON-1",
           "a put of keys another thread's held put also names was refused: " +
               std::string(kvblob_status_name(second_answer.status)) + " " + second_answer.why);
    settle_and_release(c, d, held_answer.op, "put");
    settle_and_release(c, d, second_answer.op, "put");
    c.unreg(d, region);
}

void get_during_held_put(Context &c)
{
    PausedPage page;
    if (!page.ready()) {
        c.note("no put held while it reads its bytes: " + page.why());
        return;
    }
    auto writer = c.open(), reader = c.open();
    const uint64_t size = PausedPage::size();
    // Registered before it is armed: a driver may touch a region as it registers it.
    auto src = c.reg(writer, page.data(), size);
    arm_or_skip(page);
    GuardedBuffer dst(size);
    auto rd = c.reg(reader, dst);
    const auto key = c.key("held-put");
    Batch put, get;
    put.row(key, {make_span(src, 0, size)});
    get.row(key, {make_span(rd, 0, size)});
    const auto &put_raw = put.get();
    c.wrote(put_raw);
    std::vector<uint8_t> object(size);
    fill_pattern(object.data(), size, 91);

    Answer put_answer, get_answer;
    bool touched = false, get_returned = false, final_while_held = false;
    kvblob_row_status_t seen{sizeof seen, -1, 0, 0};
    {
        CallOnThread putter([&] { put_answer = call(writer, OpKind::put, put_raw); });
        touched = page.wait_for_touch(c.op_timeout / 4);
        if (touched) {
            // The put is inside, before its object's first byte: a get now may
            // be MISS or NOT_READY, or wait (even in its call, behind a lock
            // the held put keeps); never READY, never a failure.
            CallOnThread getter([&] { get_answer = call(reader, OpKind::get, get.get()); });
            get_returned = getter.wait_for(hold_bound(c));
            const auto until = std::chrono::steady_clock::now() + hold_bound(c);
            auto pause = std::chrono::microseconds(10);
            while (get_returned && get_answer.op && std::chrono::steady_clock::now() < until) {
                uint32_t fin = 0;
                reader.table().poll(reader.handle(), get_answer.op, &fin);
                if (fin) {
                    final_while_held = true;
                    reader.table().results(reader.handle(), get_answer.op, 0, 1, &seen);
                    break;
                }
                std::this_thread::sleep_for(pause);  // polling for its answer, not ordering events
                pause = std::min(pause * 2, std::chrono::microseconds(2000));
            }
            page.release(object.data(), size);
        } else {
            page.release(object.data(), size);
        }
    }
    kvblob_op_t *get_op = get_answer.op;
    if (!touched)
        c.not_exercised("the put read no byte of its row while the check watched (a page that held no bytes until "
                        "the check stopped waiting): no put was held inside the driver, so no get ran while one was");
    expect(put_answer.status == KVBLOB_OK, "R-ADM-10",
           std::string("a put of one row was refused: ") + kvblob_status_name(put_answer.status) + " " +
               put_answer.why);
    if (touched) {
        expect(get_answer.status == KVBLOB_OK, "R-CON-1",
               std::string("a get of a key whose put is in progress was refused: ") +
                   kvblob_status_name(get_answer.status) + " " + get_answer.why);
        // A get while the put is held reads a key not yet written: READY
        // there convicts only a driver whose gets of absent keys are not READY.
        if (final_while_held && seen.result == KVBLOB_ROW_READY)
            c.require_absent_not_ready(reader, "a READY get read the put's object");
        expect(!final_while_held || seen.result == KVBLOB_ROW_MISS || seen.result == KVBLOB_ROW_NOT_READY,
               "R-CON-2",
               std::string("while a put was held before reading its object's first byte, a get of its key from "
                           "another driver answered ") +
                   kvblob_row_result_name(static_cast<kvblob_row_result>(seen.result)) +
                   "; a reader sees the whole object as READY, NOT_READY or MISS, and the object was not written "
                   "yet");
    }
    settle_and_release(c, writer, put_answer.op, "put");
    if (get_op) {
        // Once the put went on, whatever the get answers is the whole object or nothing.
        expect(c.settle(reader, get_op), "R-ACC-2", "an admitted get did not settle");
        const auto res = c.results(reader, get_op, 1)[0].result;
        expect(res != KVBLOB_ROW_READY || std::memcmp(dst.data(), object.data(), size) == 0, "R-CON-2",
               "a get that raced a put answered READY with bytes that are not the put's object");
        reader.table().release(reader.handle(), get_op);
    }
    c.unreg(reader, rd);
    c.unreg(writer, src);
}

void drain_during_held_calls(Context &c)
{
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        PausedPage page;
        if (!page.ready()) {
            c.note("no call held inside the driver: " + page.why());
            return;
        }
        arm_or_skip(page);
        auto d = c.open();
        constexpr uint64_t rows = 8, held_row = rows / 2;
        GuardedBuffer buf(rows * 16);
        fill_pattern(buf.data(), buf.size(), 93);
        auto region = c.reg(d, buf);
        Batch b;
        for (uint64_t i = 0; i < rows; ++i)
            b.row(c.key(std::string("held-drain/") + to_string(kind) + "/" + std::to_string(i)),
                  {make_span(region, i * 16, 16)});
        if (kind == OpKind::put) c.wrote(b.get());
        auto held = hold_key(b.get(), held_row, page);

        Answer answer;
        kvblob_status drained = KVBLOB_OK;
        bool touched = false, drain_returned = false;
        std::chrono::steady_clock::duration drain_took{};
        constexpr uint64_t drain_timeout_ns = 100'000'000;  // 100 ms: a drain that waits ends at it
        {
            CallOnThread caller([&] { answer = call(d, kind, held.raw); });
            touched = page.wait_for_touch(c.op_timeout / 4);
            if (touched) {
                const auto start = std::chrono::steady_clock::now();
                CallOnThread drainer([&] {
                    drained = d.table().drain(d.handle(), drain_timeout_ns);
                    drain_took = std::chrono::steady_clock::now() - start;
                });
                drain_returned = drainer.wait_for(hold_bound(c));
                page.release(held.held_key.data(), held.held_key.size());
            } else {
                page.release(held.held_key.data(), held.held_key.size());
            }
        }
        if (!touched)
            c.not_exercised(std::string("the ") + to_string(kind) + " read no key of its batch while it was called (row " +
                            std::to_string(held_row) + "'s key, on a page that held no bytes until the check stopped "
                            "waiting): no call was held inside the driver for a drain to wait for");
        expect(!(drain_returned && drained == KVBLOB_OK), "R-DRN-3",
               "drain answered KVBLOB_OK after " + ms_text(drain_took) + " while a " + to_string(kind) +
                   " call was held inside the driver reading its batch (row " + std::to_string(held_row) +
                   "'s key); drain waits for put and get calls in progress to return");
        settle_and_release(c, d, answer.op, to_string(kind));
        c.unreg(d, region);
    }
}

}  // namespace kvblob::conformance
