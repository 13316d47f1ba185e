// The host enforces the contract around whatever driver is loaded: it
// refuses before dispatch (the spy proves the driver was never called),
// never lets a region go while a driver may touch it, and turns a driver's
// bad answers into FAULT with a log line naming the rule and the driver.
#include <doctest/doctest.h>

#include <mutex>
#include <optional>

#include "fixtures/spy.hpp"
#include "guarding/answers.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"
#include "support/kept_for_good.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

// A spy driver opened through the host, with every log line kept.
struct Spied {
    explicit Spied(kvblob::Options options = {})
        : plugin(kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so")),
          driver(plugin.open(options, [this](kvblob_log_level, const std::string &m) {
              std::lock_guard lock(mu);
              log += m + "\n";
          })),
          spy(static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1")))
    {
        REQUIRE(spy);
    }
    uint64_t calls(spy_slot slot) const { return spy->calls[slot].load(); }
    kvblob::Region region(std::vector<uint8_t> &memory, kvblob_memory_kind kind = KVBLOB_MEMORY_HOST)
    {
        kvblob_region_desc_t desc{sizeof desc, kind, memory.data(), memory.size(), 0, 0};
        return driver.register_region(desc);
    }
    std::string logged()
    {
        std::lock_guard lock(mu);
        return log;
    }

    std::mutex mu;
    std::string log;
    kvblob::Plugin plugin;
    kvblob::Driver driver;
    const kvblob_spy *spy;
};

// Submits batch and requires a host refusal naming rule, with the driver's
// slot never called.
void refused_before_dispatch(Spied &s, OpKind kind, Batch &batch, const std::string &rule,
                             kvblob::Vouch vouched = kvblob::Vouch::nothing)
{
    const spy_slot slot = kind == OpKind::put ? s_put : kind == OpKind::get ? s_get : s_probe;
    const uint64_t before = s.calls(slot);
    try {
        s.driver.submit(kind, batch.get(), vouched);
        FAIL("admitted; expected a refusal under " << rule);
    } catch (const kvblob::CallError &e) {
        CHECK(e.rule() == rule);
        CHECK(e.refused());  // nothing touched: the driver was not asked
        CHECK(std::string(e.what()).find("before reaching driver spy") != std::string::npos);
    }
    CHECK_MESSAGE(s.calls(slot) == before, "the driver was called");
}

}  // namespace

TEST_CASE("a valid operation reaches the driver (the spy counts it)")
{
    Spied s;
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    const uint64_t before = s.calls(s_put);
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    auto op = s.driver.submit(OpKind::put, b.get());
    CHECK(s.calls(s_put) == before + 1);
    CHECK(op.results().at(0).result == KVBLOB_ROW_READY);
}

TEST_CASE("a batch vouched for distinct keys skips only the host's repeated-key check")
{
    Spied s;
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    const auto span = [&](uint64_t offset) { return make_span(region.handle(), offset, 64); };
    Batch repeated;
    repeated.row("k", {span(0)}).row("k", {span(64)});
    refused_before_dispatch(s, OpKind::get, repeated, "R-ADM-4");  // as any caller's, unvouched

    // What a composing driver does with its own admitted rows: the host
    // takes its word for the keys, and the driver is called.
    const uint64_t before = s.calls(s_get);
    auto op = s.driver.submit(OpKind::get, repeated.get(), kvblob::Vouch::distinct_keys);
    CHECK(s.calls(s_get) == before + 1);
    CHECK(op.results().size() == 2);

    // Every other check stands, on the rows after a repeated key too.
    Batch empty, oversized, outside;
    empty.row("k", {span(0)}).row("k", {span(64)}).row("", {span(128)});
    oversized.row("k", {span(0)}).row("k", {span(64)}).row(std::string(33, 'k'), {span(128)});
    outside.row("k", {span(0)}).row("k", {span(64)}).row("j", {make_span(region.handle(), 4000, 200)});
    refused_before_dispatch(s, OpKind::get, empty, "R-ADM-4", kvblob::Vouch::distinct_keys);
    refused_before_dispatch(s, OpKind::get, oversized, "R-ADM-4", kvblob::Vouch::distinct_keys);
    refused_before_dispatch(s, OpKind::get, outside, "R-ADM-6", kvblob::Vouch::distinct_keys);
}

TEST_CASE("refused before dispatch, each naming its rule: the driver is never called")
{
    Spied s;
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    auto span = make_span(region.handle(), 0, 64);

    SUBCASE("a hint to a driver without hints (R-ADM-7)")
    {
        Batch b;
        b.row("k", {span}).hint("priority=high");
        refused_before_dispatch(s, OpKind::put, b, "R-ADM-7");
    }
    SUBCASE("no rows, and more rows than declared (R-ADM-3)")
    {
        Batch none;
        refused_before_dispatch(s, OpKind::put, none, "R-ADM-3");
        Batch many;
        for (int i = 0; i < 9; ++i) many.row("k" + std::to_string(i), {make_span(region.handle(), i * 64, 64)});
        refused_before_dispatch(s, OpKind::put, many, "R-ADM-3");
    }
    SUBCASE("empty, duplicate and oversized keys (R-ADM-4)")
    {
        Batch empty, dup, big;
        empty.row("", {span});
        dup.row("k", {span}).row("k", {make_span(region.handle(), 64, 64)});
        big.row(std::string(33, 'k'), {span});
        refused_before_dispatch(s, OpKind::put, empty, "R-ADM-4");
        refused_before_dispatch(s, OpKind::put, dup, "R-ADM-4");
        refused_before_dispatch(s, OpKind::get, big, "R-ADM-4");
    }
    SUBCASE("a multi-span row to a single-span driver, and an object over the limit (R-ADM-5)")
    {
        Batch multi, large;
        multi.row("k", {span, make_span(region.handle(), 64, 64)});
        refused_before_dispatch(s, OpKind::put, multi, "R-ADM-5");
        large.row("k", {make_span(region.handle(), 0, 4096)});  // fits the region; the driver takes 4096...
        std::vector<uint8_t> more(8192);
        auto bigger = s.region(more);
        Batch over;
        over.row("k", {make_span(bigger.handle(), 0, 4097)});  // ...and not one byte more
        refused_before_dispatch(s, OpKind::put, over, "R-ADM-5");
    }
    SUBCASE("spans outside live registrations (R-ADM-6)")
    {
        Batch outside, unknown, gone;
        outside.row("k", {make_span(region.handle(), 4000, 200)});
        refused_before_dispatch(s, OpKind::put, outside, "R-ADM-6");
        kvblob_region_t *never = reinterpret_cast<kvblob_region_t *>(&memory);  // a handle the host never gave out
        unknown.row("k", {make_span(never, 0, 64)});
        refused_before_dispatch(s, OpKind::get, unknown, "R-ADM-6");
        std::vector<uint8_t> other(4096);
        auto temporary = s.region(other);
        kvblob_region_t *handle = temporary.handle();
        REQUIRE(temporary.unregister() == KVBLOB_OK);
        gone.row("k", {make_span(handle, 0, 64)});
        refused_before_dispatch(s, OpKind::put, gone, "R-ADM-6");
    }
}

TEST_CASE("DEVICE memory to a driver without device_memory is refused before dispatch (R-ADM-8)")
{
    Spied s;
    std::vector<uint8_t> memory(4096);
    const uint64_t before = s.calls(s_register);
    try {
        s.region(memory, KVBLOB_MEMORY_DEVICE);
        FAIL("registered");
    } catch (const kvblob::CallError &e) {
        CHECK(e.rule() == "R-ADM-8");
    }
    CHECK(s.calls(s_register) == before);
}

TEST_CASE("a region is never unregistered while an operation naming it may touch it (R-REG-1)")
{
    // This spy would unregister anything: the host alone protects the memory.
    Spied s(kvblob::Options{{"access", "manual"}});
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    auto op = s.driver.submit(OpKind::get, b.get());
    const uint64_t before = s.calls(s_unregister);
    CHECK(region.unregister() == KVBLOB_E_BUSY);
    CHECK(op.release() == KVBLOB_E_BUSY);
    CHECK(s.calls(s_unregister) == before);  // not even asked
    s.spy->end_access_all(s.driver.handle());
    CHECK(op.release() == KVBLOB_OK);
    CHECK(region.unregister() == KVBLOB_OK);
    CHECK(s.calls(s_unregister) == before + 1);
}

TEST_CASE("unprovable access pins the region for good, shutdown frees nothing, and the log says why (R-REG-2)")
{
    const auto keep_loaded = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");  // its counters stay
    // The memory stays alive for the life of the process, on purpose.
    auto *memory = &kept_for_good<std::vector<uint8_t>>(4096, 7);
    std::string log;
    uint64_t unregisters = 0, closes = 0;
    {
        Spied s(kvblob::Options{{"access", "unprovable"}});
        auto region = s.region(*memory);
        Batch b;
        b.row("k", {make_span(region.handle(), 0, 64)});
        auto op = s.driver.submit(OpKind::put, b.get());
        CHECK(op.access() == KVBLOB_ACCESS_UNPROVABLE);
        unregisters = s.calls(s_unregister);
        closes = s.calls(s_close);
        CHECK(region.unregister() == KVBLOB_E_UNPROVABLE);
        CHECK(op.release() == KVBLOB_E_UNPROVABLE);
        CHECK(s.calls(s_unregister) == unregisters);
        CHECK(s.driver.shutdown(1s) == KVBLOB_E_BUSY);  // region and operation still held here
        log = s.logged();
    }  // op, region and driver dropped: shutdown runs now, and must keep everything
    Spied after;
    CHECK(log.find("access is unprovable") != std::string::npos);
    CHECK(log.find("life of the process (R-REG-2)") != std::string::npos);
    CHECK(after.calls(s_unregister) == unregisters);  // never asked to let the memory go
    CHECK(after.calls(s_close) == closes);            // the driver was never closed
    CHECK((*memory)[0] == 7);
}

TEST_CASE("the host's inline test of a first answer lets stand exactly what check_answer lets stand")
{
    // judged_rows takes answer_stands's word without calling check_answer:
    // the two must never disagree on a first final answer.
    for (OpKind kind : {OpKind::put, OpKind::get, OpKind::probe, OpKind::remove})
        for (bool cancel : {false, true})
            for (int32_t r = -2; r <= KVBLOB_ROW_RESULT_LAST + 2; ++r) {
                const kvblob_row_status_t raw{sizeof raw, static_cast<kvblob_row_result>(r), 7, 0};
                const kvblob::CheckedRow checked = kvblob::check_answer(kind, cancel, KVBLOB_OK, raw, nullptr);
                CHECK_MESSAGE(kvblob::answer_stands(kind, cancel, raw.result) == (checked.broken_rule == nullptr),
                              kvblob::to_string(kind) << " result " << r << (cancel ? " after a cancel" : ""));
            }
}

TEST_CASE("bad answers become FAULT, with a log line naming the rule and the driver")
{
    std::vector<uint8_t> memory(4096);
    auto answer = [&](const std::string &mode, OpKind kind, bool cancel) {
        Spied s(kvblob::Options{{"results", mode}});
        auto region = s.region(memory);
        Batch b;
        b.row("k", {make_span(region.handle(), 0, 64)});
        auto op = s.driver.submit(kind, b.get());
        if (cancel) op.cancel();
        auto first = op.results().at(0).result;
        // Asked again into a vector of another size and other answers: sized
        // to the operation, each row the host's judged answer.
        std::vector<kvblob::RowStatus> kept(5, kvblob::RowStatus{KVBLOB_ROW_MISS, 7});
        op.results(kept);
        REQUIRE(kept.size() == 1);
        auto second = kept[0].result;
        return std::tuple{first, second, op.message(0), s.logged()};
    };
    SUBCASE("a result out of range (R-ROW-1)")
    {
        auto [r, again, message, log] = answer("out-of-range", OpKind::get, false);
        CHECK(r == KVBLOB_ROW_FAULT);
        CHECK(message.find("R-ROW-1") != std::string::npos);
        CHECK(log.find("driver spy broke R-ROW-1") != std::string::npos);
    }
    SUBCASE("MISS for a put (R-ROW-1)")
    {
        auto [r, again, message, log] = answer("miss-on-put", OpKind::put, false);
        CHECK(r == KVBLOB_ROW_FAULT);
        CHECK(log.find("MISS is never a put's result") != std::string::npos);
    }
    SUBCASE("CANCELLED for a row nobody cancelled (R-CAN-1), accepted once cancel was asked")
    {
        auto [r, again, message, log] = answer("cancelled", OpKind::get, false);
        CHECK(r == KVBLOB_ROW_FAULT);
        CHECK(log.find("driver spy broke R-CAN-1") != std::string::npos);
        auto [asked, again2, message2, log2] = answer("cancelled", OpKind::get, true);
        CHECK(asked == KVBLOB_ROW_CANCELLED);
        CHECK(log2.find("broke") == std::string::npos);
    }
    SUBCASE("a final result that changes keeps its first value (R-ROW-1)")
    {
        auto [r, again, message, log] = answer("change", OpKind::get, false);
        CHECK(r == KVBLOB_ROW_READY);
        CHECK(again == KVBLOB_ROW_READY);
        CHECK(log.find("final result changed from READY to DECLINED") != std::string::npos);
    }
}

TEST_CASE("the host's record of an operation starts over for the next: a cancel and an answer are the released one's")
{
    // The host keeps released operations' records for the next submits
    // (host/src/guarding/op_records.cpp). The spy answers CANCELLED to
    // every row: accepted where cancel was asked (R-CAN-1), FAULT where it
    // was not. A record that kept its cancel, or its first final answer,
    // would let the second operation's CANCELLED stand.
    Spied s(kvblob::Options{{"results", "cancelled"}});
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    for (int i = 0; i < 3; ++i) {
        auto cancelled = s.driver.submit(OpKind::get, b.get());
        cancelled.cancel();
        CHECK(cancelled.results().at(0).result == KVBLOB_ROW_CANCELLED);
        CHECK(cancelled.release() == KVBLOB_OK);
    }
    CHECK(s.logged().find("broke") == std::string::npos);
    auto next = s.driver.submit(OpKind::get, b.get());
    CHECK(next.results().at(0).result == KVBLOB_ROW_FAULT);
    CHECK(next.message(0).find("R-CAN-1") != std::string::npos);
    CHECK(s.logged().find("driver spy broke R-CAN-1") != std::string::npos);
}

TEST_CASE("a poll that goes back from final changes nothing, and the log says so (R-ROW-1)")
{
    Spied s(kvblob::Options{{"poll", "flip"}});
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    auto op = s.driver.submit(OpKind::put, b.get());
    CHECK(op.is_final());
    CHECK(op.is_final());  // the driver now says it is not
    CHECK(op.release() == KVBLOB_OK);
    CHECK(s.logged().find("driver spy broke R-ROW-1: poll went back from final") != std::string::npos);
}

TEST_CASE("shutdown drains, then unregisters, then closes")
{
    const auto keep_loaded = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");  // its counters stay
    // The extension struct dies with its driver; the order it points to is
    // process-wide and outlives it.
    std::string (*order)() = nullptr;
    std::string before;
    {
        Spied s;
        order = s.spy->order;
        before = order();
        std::vector<uint8_t> memory(4096);
        auto region = s.region(memory);
        kvblob::Region kept = std::move(region);
        // Dropping the driver object last: the core shuts down with the last holder.
        Batch b;
        b.row("k", {make_span(kept.handle(), 0, 64)});
        s.driver.submit(OpKind::put, b.get());
        kept = kvblob::Region();  // unregisters now
    }
    CHECK(order().substr(before.size()) == "UDC");

    std::string middle;
    {
        Spied s(kvblob::Options{{"access", "manual"}});
        middle = order();
        std::vector<uint8_t> memory(4096);
        {
            auto region = s.region(memory);
            Batch b;
            b.row("k", {make_span(region.handle(), 0, 64)});
            s.driver.submit(OpKind::put, b.get());  // access still open: the region is pinned, the op parked
        }
        s.spy->end_access_all(s.driver.handle());
    }  // shutdown: drain, then the parked op and the pinned region, then close
    CHECK(order().substr(middle.size()) == "DUC");
}

TEST_CASE("an engine's log sink may call back into the host: no host lock is held while it runs")
{
    // The sink unregisters another region when it hears of unprovable
    // access. Were the host's lock held across the sink, this would deadlock
    // (ctest's timeout turns a hang into a failure).
    auto plugin = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");
    std::optional<kvblob::Region> other;
    kvblob_status from_sink = KVBLOB_E_INTERNAL;
    bool heard = false;
    auto driver = plugin.open({{"access", "unprovable"}}, [&](kvblob_log_level, const std::string &m) {
        if (!heard && m.find("unprovable") != std::string::npos && other) {
            heard = true;
            from_sink = other->unregister();
        }
    });
    auto *pinned = &kept_for_good<std::vector<uint8_t>>(4096);  // its access is never proven
    std::vector<uint8_t> spare(4096);
    kvblob_region_desc_t a{sizeof a, KVBLOB_MEMORY_HOST, pinned->data(), pinned->size(), 0, 0};
    kvblob_region_desc_t b{sizeof b, KVBLOB_MEMORY_HOST, spare.data(), spare.size(), 0, 0};
    auto region = driver.register_region(a);
    other = driver.register_region(b);
    Batch batch;
    batch.row("k", {make_span(region.handle(), 0, 64)});
    auto op = driver.submit(OpKind::put, batch.get());
    CHECK(op.access() == KVBLOB_ACCESS_UNPROVABLE);
    CHECK(heard);
    CHECK(from_sink == KVBLOB_OK);
}
