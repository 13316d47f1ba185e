// Races in the tiered driver (plugins/tiered): a get's promotion against a
// remove of its key (plugins/tiered/key_stripes.hpp), and write=back puts
// that hold the queue's writer against the driver's workers
// (plugins/tiered/write_back.hpp, ready). Events are ordered by the
// driver's own log lines: the log sink runs in the driver's thread, so a
// sink that holds on a given line stops that thread right there (the
// "evicted ..." line that remove_from_top writes, under drop()).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "plugins/driver_harness.hpp"
#include "support/temp_dir.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

// A log sink that holds the first thread whose line holds `text` (once
// armed) until release(), and tells the test when it holds one.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    std::string text;
    bool armed = false, holding = false, open = false;
    std::vector<std::string> lines;

    kvblob::LogSink sink()
    {
        return [this](kvblob_log_level, const std::string &line) {
            std::unique_lock lock(mu);
            lines.push_back(line);
            cv.notify_all();  // a wait_line_or may wait for this line
            if (!armed || line.find(text) == std::string::npos) return;
            armed = false;
            holding = true;
            cv.notify_all();
            cv.wait(lock, [&] { return open; });
            holding = false;
        };
    }
    void arm(const std::string &t)
    {
        std::lock_guard lock(mu);
        text = t;
        armed = true;
        open = false;
    }
    bool wait_holding(std::chrono::seconds within)
    {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, within, [&] { return holding; });
    }
    void release()
    {
        {
            std::lock_guard lock(mu);
            open = true;
        }
        cv.notify_all();
    }
    // Waits, up to within, until a line holding text was logged or done()
    // (read under the gate's lock; whoever changes it calls changed()).
    bool wait_line_or(const std::string &t, const std::function<bool()> &done, std::chrono::seconds within)
    {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, within, [&] {
            if (done()) return true;
            for (const auto &l : lines)
                if (l.find(t) != std::string::npos) return true;
            return false;
        });
    }
    void changed()
    {
        { std::lock_guard lock(mu); }
        cv.notify_all();
    }
};

// Submits a remove of key and, once it is final, tells the gate.
struct Removal {
    Gate &gate;
    Batch batch;
    std::optional<kvblob::Operation> op;
    std::atomic<bool> final{false};
    std::thread watcher;
    Removal(Gate &g, kvblob::Driver &driver, const std::string &key) : gate(g)
    {
        batch.row(key);
        op.emplace(driver.submit(OpKind::remove, batch.get()));
        watcher = std::thread([this] {
            while (!op->wait(std::chrono::seconds(1))) {
            }
            final = true;
            gate.changed();
        });
    }
    ~Removal()
    {
        if (watcher.joinable()) watcher.join();
    }
    // After the promotion is let go: the remove's answer.
    kvblob_row_result result()
    {
        watcher.join();
        return op->results().at(0).result;
    }
};

// Where a remove of a key whose promotion is held waits for it (key_stripes.hpp).
const std::string remove_waits_line = "a remove waits for a promotion";

// A driver opened with a log sink of the test's.
struct Opened {
    kvblob::Plugin plugin;
    kvblob::Driver driver;
    Opened(const std::string &name, const kvblob::Options &options, kvblob::LogSink sink = {})
        : plugin(kvblob::Plugin::load(name)), driver(plugin.open(options, std::move(sink)))
    {
    }
    Buffer buffer(size_t size, uint8_t fill = 0)
    {
        Buffer b{std::vector<uint8_t>(size, fill), {}};
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, b.bytes.data(), size, 0, 0};
        b.region = driver.register_region(desc);
        return b;
    }
    kvblob_row_result one(OpKind kind, const std::string &key, std::vector<kvblob_span_t> spans = {})
    {
        Batch b;
        b.row(key, std::move(spans));
        auto op = driver.submit(kind, b.get());
        REQUIRE(op.wait(std::chrono::seconds(60)));
        return op.results().at(0).result;
    }
};

bool holds(DriverHarness &h, const std::string &key) { return h.one(OpKind::probe, key) == KVBLOB_ROW_READY; }

const std::string evicted_line = "least recently used object(s) from";

// On a stack whose top tier holds top_bytes 8K: V (4 KiB, written through,
// so in the recency record, held below) and K (8 KiB, only in the tier
// below, put through `below`). The get of K is READY from below; its
// promotion reads K again from below, then, K being over top_bytes with V,
// evicts V first: held there (its log line, once this returns), after its
// read of K and before its put.
void hold_promotion_of_k(Opened &tiered, Gate &gate, DriverHarness &below, const std::string &prefix)
{
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 3);
    REQUIRE(tiered.one(OpKind::put, prefix + "/v", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    auto k = below.buffer(8192);
    fill_pattern(k.bytes.data(), k.bytes.size(), 4);
    REQUIRE(below.one(OpKind::put, prefix + "/k", {make_span(k.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
    gate.arm(evicted_line);
    auto dst = tiered.buffer(8192);
    REQUIRE(tiered.one(OpKind::get, prefix + "/k", {make_span(dst.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
    CHECK(dst.bytes == k.bytes);
    REQUIRE(gate.wait_holding(60s));
}

const std::string room_line = "a put waits for room in the queue";

// Everything a deadlock test names, on the heap, so that a deadlocked driver
// can be left as it is (leaked) rather than closed.
struct Stack {
    Gate gate;
    std::optional<Opened> tiered;
    std::optional<Buffer> src;
    std::vector<Batch> batches;
    std::vector<kvblob::Operation> ops;
};

// A tiered write=back stack, memory over memory, one worker, a 64 KiB
// queue. The top tier ends each operation's access 2 s after its results
// are final, so a write=back put submitted with submit_watch_us 0 always
// hands the end of its top tier's put to a worker (start_back_put's
// continuation), after having reserved room in the queue and claimed its
// keys there, in submit.
//
// Q: 40 KiB + 60 KiB, more than the queue at once, so it runs on the one
// worker: q0 is stored and queued (40 KiB of the queue), q1 waits for room;
// the log line of that wait holds the worker (before it waits).
std::unique_ptr<Stack> waiting_put_stack(const std::string &tag)
{
    auto s = std::make_unique<Stack>();
    s->tiered.emplace("tiered",
                      kvblob::Options{{"tier.0.driver", "memory"},
                                      {"tier.0.store", unique_store("races-top")},
                                      {"tier.0.access_delay_ms", "2000"},
                                      {"tier.1.driver", "memory"},
                                      {"tier.1.store", unique_store("races-bottom")},
                                      {"write", "back"},
                                      {"workers", "1"},
                                      {"submit_watch_us", "0"},
                                      {"write_back_queue_bytes", "64K"}},
                      s->gate.sink());
    auto &t = *s->tiered;
    s->src.emplace(t.buffer(256 << 10));
    fill_pattern(s->src->bytes.data(), s->src->bytes.size(), 11);
    const auto src = s->src->handle();
    s->gate.arm(room_line);
    s->batches.emplace_back();
    s->batches.back()
        .row(tag + "/q0", {make_span(src, 0, 40 << 10)})
        .row(tag + "/q1", {make_span(src, 40 << 10, 60 << 10)});
    s->ops.push_back(t.driver.submit(OpKind::put, s->batches.back().get()));
    REQUIRE(s->gate.wait_holding(60s));
    return s;
}

}  // namespace

// R-RMV-1: a READY remove means a later get of that key is MISS until someone
// puts it again. A get READY from tier 1 is promoted after it is final: the
// promotion reads the row again from tier 1 (read_promoted), then puts it
// into tier 0 (promote -> put_top_sized). A remove that ran between the
// two would remove the key from tier 0 (absent yet) and from tier 1, answer
// READY, and the promotion would then put the removed bytes into tier 0:
// the key READY again with nobody having put it.
TEST_CASE("tiered: a remove while a promotion of its key is under way leaves the key in no tier (R-RMV-1)")
{
    TempDir root("kvblob-tiered-races");
    const std::string store = unique_store("tiered-races-promote");
    DriverHarness top("memory", {{"store", store}});  // keeps the top store alive between drivers
    DriverHarness file("file", {{"root", root.path()}});
    const kvblob::Options options{{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "file"},
                                  {"tier.1.root", root.path()},  {"workers", "2"},          {"top_bytes", "8K"}};
    {
        Gate gate;
        Opened tiered("tiered", options, gate.sink());
        hold_promotion_of_k(tiered, gate, file, "rv");

        // The remove is submitted after the get is final. It either ends
        // while the promotion is held (which must leave no trace of it), or
        // says it waits for the promotion: the gate opens on either signal.
        Removal remove(gate, tiered.driver, "rv/k");
        REQUIRE(gate.wait_line_or(remove_waits_line, [&] { return remove.final.load(); }, 60s));
        gate.release();
        CHECK(remove.result() == KVBLOB_ROW_READY);
        CHECK_FALSE(holds(file, "rv/k"));
        // Every promotion of a get already final has ended (drain waits for them).
        REQUIRE(tiered.driver.drain(std::chrono::seconds(60)) == KVBLOB_OK);
    }
    // Nobody put K since its READY remove.
    CHECK_FALSE(holds(top, "rv/k"));  // not put back into tier 0 by the promotion
    Opened again("tiered", options);
    auto dst = again.buffer(8192);
    CHECK(again.one(OpKind::get, "rv/k", {make_span(dst.handle(), 0, 8192)}) == KVBLOB_ROW_MISS);
}

// The same race under write=back: a top-tier object put back by the
// promotion would swallow the next put of the key (the top tier answers
// READY for a key it holds, R-ROW-7, leaving its old bytes), and the
// write=back writer, which reads the row back from the top tier, would
// write the removed bytes below: a put READY whose bytes are nowhere.
TEST_CASE("tiered: write=back: a put after a remove that met a promotion stores its own bytes, in every tier")
{
    TempDir root("kvblob-tiered-races");
    const std::string store = unique_store("tiered-races-back");
    DriverHarness top("memory", {{"store", store}});
    DriverHarness file("file", {{"root", root.path()}});
    const kvblob::Options options{{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "file"},
                                  {"tier.1.root", root.path()},  {"workers", "2"},          {"top_bytes", "8K"},
                                  {"write", "back"}};
    auto k1 = file.buffer(8192);
    fill_pattern(k1.bytes.data(), k1.bytes.size(), 5);
    {
        Gate gate;
        Opened tiered("tiered", options, gate.sink());
        auto src = tiered.buffer(8192);
        fill_pattern(src.bytes.data(), src.bytes.size(), 6);
        // V and W, 4 KiB each, one write=back put; the remove of W waits
        // for their block to be written below (write_back_->settle), so V
        // is then held below in the recency record: a victim.
        Batch vw;
        vw.row("rb/v", {make_span(src.handle(), 0, 4096)}).row("rb/w", {make_span(src.handle(), 4096, 4096)});
        auto put = tiered.driver.submit(OpKind::put, vw.get());
        REQUIRE(put.wait(60s));
        for (const auto &r : put.results()) REQUIRE(r.result == KVBLOB_ROW_READY);
        REQUIRE(tiered.one(OpKind::remove, "rb/w") == KVBLOB_ROW_READY);

        // K (first incarnation, pattern 5): 8 KiB, only in tier 1.
        REQUIRE(file.one(OpKind::put, "rb/k", {make_span(k1.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
        gate.arm(evicted_line);
        auto dst = tiered.buffer(8192);
        REQUIRE(tiered.one(OpKind::get, "rb/k", {make_span(dst.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
        REQUIRE(gate.wait_holding(60s));
        Removal remove(gate, tiered.driver, "rb/k");
        REQUIRE(gate.wait_line_or(remove_waits_line, [&] { return remove.final.load(); }, 60s));
        gate.release();
        CHECK(remove.result() == KVBLOB_ROW_READY);
        REQUIRE(tiered.driver.drain(60s) == KVBLOB_OK);
    }
    // K is absent (removed, READY). A new object under K (pattern 7).
    {
        Opened tiered("tiered", options);
        auto k2 = tiered.buffer(8192);
        fill_pattern(k2.bytes.data(), k2.bytes.size(), 7);
        REQUIRE(tiered.one(OpKind::put, "rb/k", {make_span(k2.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
        REQUIRE(tiered.driver.drain(60s) == KVBLOB_OK);  // written below
        auto below = file.buffer(8192);
        REQUIRE(file.one(OpKind::get, "rb/k", {make_span(below.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
        CHECK(below.bytes == k2.bytes);  // not the removed bytes (k1)
        CHECK(below.bytes != k1.bytes);
    }
    Opened again("tiered", options);
    auto dst = again.buffer(8192);
    REQUIRE(again.one(OpKind::get, "rb/k", {make_span(dst.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
    CHECK(dst.bytes != k1.bytes);
}

// write=back, workers=1. A put (P) that took the submitting thread's path
// (start_back_put) holds the queue's writer until it is final, and hands
// its DECLINED row to a worker (end_back_put). A put (Q) already on that
// worker waits for room in the queue (reserve_some), room only the writer
// frees. Were the writer to start no block while P holds it, P's
// continuation would wait behind Q for good. Here the window between P's
// claim and its continuation is held open by the log sink (P's trim evicts
// V, logged); with the default 4 workers it takes four waiting puts, or
// removes waiting in settle for a key such a put queued.
TEST_CASE("tiered: write=back: a put holding the writer never waits for good behind a put that waits for room")
{
    TempDir root("kvblob-tiered-races");
    const std::string store = unique_store("tiered-races-deadlock");
    Gate gate;
    Opened tiered("tiered",
                  {{"tier.0.driver", "memory"},
                   {"tier.0.store", store},
                   {"tier.0.capacity", "64K"},
                   {"tier.0.mode", "blocking"},
                   {"tier.1.driver", "file"},
                   {"tier.1.root", root.path()},
                   {"write", "back"},
                   {"workers", "1"},
                   {"write_back_queue_bytes", "64K"},
                   {"lru_keys", "1"}},
                  gate.sink());
    auto src = tiered.buffer(160 << 10);
    fill_pattern(src.bytes.data(), src.bytes.size(), 8);

    // V: 4 KiB, written below (stage_full_pool waits for the queue to be
    // empty; released at once): the one record, held below.
    REQUIRE(tiered.one(OpKind::put, "dl/v", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    const kvblob_scenarios_t *hooks = tiered.driver.scenarios();
    REQUIRE(hooks != nullptr);
    REQUIRE(hooks->stage_full_pool(tiered.driver.handle()) == KVBLOB_OK);
    REQUIRE(hooks->release_staged(tiered.driver.handle()) == KVBLOB_OK);

    // P: K (4 KiB, stored in the top tier) and B (60 KiB, which the 64 KiB
    // top tier holding V and K DECLINES): room reserved for both at once,
    // so from the submitting thread. Its record of K pushes V out (lru_keys
    // 1): the eviction's log line holds P's thread there, P holding the
    // writer.
    gate.arm(evicted_line);
    std::optional<kvblob::Operation> p;
    Batch pb;
    pb.row("dl/k", {make_span(src.handle(), 4096, 4096)}).row("dl/b", {make_span(src.handle(), 8192, 60 << 10)});
    std::thread submitter([&] { p.emplace(tiered.driver.submit(OpKind::put, pb.get())); });
    REQUIRE(gate.wait_holding(60s));

    // Q: two rows of 40 KiB, more than the queue at once: to the worker,
    // which stores q0 and waits for room for q1.
    Batch qb;
    qb.row("dl/q0", {make_span(src.handle(), 72 << 10, 40 << 10)})
        .row("dl/q1", {make_span(src.handle(), 112 << 10, 40 << 10)});
    auto q = tiered.driver.submit(OpKind::put, qb.get());
    gate.release();
    submitter.join();
    REQUIRE(p);

    // Q waits for room, so the writer writes despite P's hold: both end,
    // with nothing else to move them (the waits are hang guards, not an
    // ordering: with the cycle neither ever ends).
    REQUIRE(p->wait(60s));
    REQUIRE(q.wait(60s));
    for (const auto &r : p->results()) CHECK(r.result == KVBLOB_ROW_READY);
    for (const auto &r : q.results()) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(tiered.driver.drain(60s) == KVBLOB_OK);
}

// A write=back put P that takes the submitting thread's path
// (start_back_put) reserves its room in the queue (try_reserve) and claims
// its keys before its top tier's put is done; where that put is not done
// within the watch, the rest of P (queue_stored: the push that lets the
// writer free P's room) waits for it on a thread. Were that thread one of
// the driver's workers, a put Q already on a worker waiting for room
// (reserve_some), room that only P's end frees, would hold P's end behind
// it: with every worker so waiting (here the one worker), neither would
// ever end. P's end runs on threads of its own (back_put_ends_).
TEST_CASE("tiered: write=back: a put waiting for room never waits for good for a put queued behind it")
{
    auto s = waiting_put_stack("rr");
    auto &t = *s->tiered;
    // P: 16 KiB, room at once (40 + 16 of 64 KiB): reserved and claimed in
    // submit, the end of its top put handed to the worker, behind Q.
    s->batches.emplace_back();
    s->batches.back().row("rr/p", {make_span(s->src->handle(), 128 << 10, 16 << 10)});
    s->ops.push_back(t.driver.submit(OpKind::put, s->batches.back().get()));
    s->gate.release();

    // The waits are hang guards, not an ordering: with the cycle neither
    // ever ends (q1's 60 KiB never fit beside P's 16). Without it, both end
    // within a few of the top tier's 2 s.
    auto &q = s->ops[0], &p = s->ops[1];
    const bool q_final = q.wait(60s), p_final = p.wait(1s);
    CHECK(q_final);
    CHECK(p_final);
    if (q_final && p_final) {
        for (const auto &r : q.results()) CHECK(r.result == KVBLOB_ROW_READY);
        for (const auto &r : p.results()) CHECK(r.result == KVBLOB_ROW_READY);
        CHECK(t.driver.drain(60s) == KVBLOB_OK);
    } else {
        (void)s.release();  // deadlocked: closing would wait for good
    }
}

// The same cycle through a remove: a remove R on the worker waits in
// settle() for a key that P claimed in submit, whose block only P's end
// pushes.
TEST_CASE("tiered: write=back: a remove never waits for good for a put of its key queued behind it")
{
    auto s = waiting_put_stack("rm");
    auto &t = *s->tiered;
    // R: a remove of X, queued behind Q.
    s->batches.emplace_back();
    s->batches.back().row("rm/x");
    s->ops.push_back(t.driver.submit(OpKind::remove, s->batches.back().get()));
    // P: a put of X, room at once (40 + 4 of 64 KiB): X claimed in submit,
    // the end of its top put handed to the worker, behind R.
    s->batches.emplace_back();
    s->batches.back().row("rm/x", {make_span(s->src->handle(), 128 << 10, 4096)});
    s->ops.push_back(t.driver.submit(OpKind::put, s->batches.back().get()));
    s->gate.release();

    // Q ends (the writer frees q0's room, q1 then fits beside P's 4 KiB);
    // R then waits for X, and P waits behind R.
    auto &q = s->ops[0], &r = s->ops[1], &p = s->ops[2];
    REQUIRE(q.wait(60s));
    const bool r_final = r.wait(60s), p_final = p.wait(1s);
    CHECK(r_final);
    CHECK(p_final);
    if (r_final && p_final) {
        CHECK(t.driver.drain(60s) == KVBLOB_OK);
    } else {
        (void)s.release();  // deadlocked: closing would wait for good
    }
}

// stage_corrupt through the stack: the bottom tier's object is corrupted,
// then the key is purged from the upper tiers (stage_keyed), so that "a
// later get is FAULT, never READY" (docs/contract.md, scenario hooks;
// R-ROW-6). Without its key's stripe, a promotion that read K before the
// stage would put K into the top tier after the purge, and the stack would
// answer READY for K from then on. Ordered as the remove's case above: the
// promotion of K evicts V (top_bytes 8K), and that line holds it, after its
// read of K and before its put.
TEST_CASE("tiered: stage_corrupt while a promotion of its key is under way: a later get is never READY")
{
    const std::string top_store = unique_store("races-corrupt-top"), bottom_store = unique_store("races-corrupt-bottom");
    DriverHarness top("memory", {{"store", top_store}});  // keeps the top store alive between drivers
    DriverHarness bottom("memory", {{"store", bottom_store}});
    const kvblob::Options options{{"tier.0.driver", "memory"}, {"tier.0.store", top_store},
                                  {"tier.1.driver", "memory"}, {"tier.1.store", bottom_store},
                                  {"workers", "2"},            {"top_bytes", "8K"}};
    {
        Gate gate;
        Opened tiered("tiered", options, gate.sink());
        hold_promotion_of_k(tiered, gate, bottom, "rc");  // K read again from tier 1, not yet put into tier 0

        const kvblob_scenarios_t *hooks = tiered.driver.scenarios();
        REQUIRE(hooks != nullptr);
        REQUIRE(static_cast<bool>(hooks->stage_corrupt));
        const std::string key = "rc/k";
        // The stage either ends while the promotion is held, or says it
        // waits for it: the gate opens on either signal.
        std::atomic<bool> staged{false};
        kvblob_status stage = KVBLOB_E_STORE;
        std::thread stager([&] {
            stage = hooks->stage_corrupt(tiered.driver.handle(), reinterpret_cast<const uint8_t *>(key.data()),
                                         key.size());
            staged = true;
            gate.changed();
        });
        REQUIRE(gate.wait_line_or("a staged scenario waits for a promotion", [&] { return staged.load(); }, 60s));
        gate.release();
        stager.join();
        REQUIRE(stage == KVBLOB_OK);
        REQUIRE(tiered.driver.drain(60s) == KVBLOB_OK);  // every promotion of a final get ended
    }
    CHECK_FALSE(holds(top, "rc/k"));  // purged by the stage, not put back by the promotion
    Opened again("tiered", options);
    auto dst = again.buffer(8192);
    const auto got = again.one(OpKind::get, "rc/k", {make_span(dst.handle(), 0, 8192)});
    CHECK(got == KVBLOB_ROW_FAULT);
    CHECK(got != KVBLOB_ROW_READY);
}
