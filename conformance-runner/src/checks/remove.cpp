// remove.*: R-RMV-1, what a remove answers and leaves behind.
#include "common.hpp"

#include <cstring>

#include "kvblob/tools/fill_pattern.hpp"

namespace kvblob::conformance {

namespace {

void remove_being_written(Context &c)
{
    auto d = c.open();
    auto k = c.key("fw");
    c.stage(d, "stage_foreign_writer", k, "R-RMV-1");
    auto res = c.run_one(d, OpKind::remove, k);
    expect(res == KVBLOB_ROW_NOT_READY, "R-RMV-1",
           std::string("remove of a key being written is ") + kvblob_row_result_name(res));
    res = c.run_one(d, OpKind::probe, k);
    expect(res == KVBLOB_ROW_NOT_READY, "R-RMV-1",
           std::string("after a remove, probe of a key still being written is ") +
               kvblob_row_result_name(res));
}

void remove_then_miss(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(512);
    auto r = c.reg(d, buf);
    auto k = c.key("rm");
    c.require_absent_not_ready(d, "the removed key is gone", OpKind::probe);
    c.run_one(d, OpKind::put, k, {make_span(r, 0, 512)});
    auto res = c.run_one(d, OpKind::remove, k);
    expect(res == KVBLOB_ROW_READY, "R-RMV-1",
           std::string("remove of a stored key answered ") + kvblob_row_result_name(res) +
               "; R-RMV-1 wants READY");
    res = c.run_one(d, OpKind::probe, k);
    expect(res == KVBLOB_ROW_MISS, "R-RMV-1",
           std::string("probe after a READY remove answered ") + kvblob_row_result_name(res) +
               "; R-RMV-1 wants MISS");
    res = c.run_one(d, OpKind::remove, k);
    expect(res == KVBLOB_ROW_MISS, "R-RMV-1",
           std::string("remove of an absent key answered ") + kvblob_row_result_name(res) +
               "; R-RMV-1 wants MISS");
}

// A key put again right after a READY remove is absent (R-RMV-1): the put
// stores the new bytes and answers READY, and a get returns them, at once
// and from another driver of the same store. A driver that remembers
// removed keys for a while (a negative or existence cache) answers READY
// for a put it never stored.
void remove_put_again(Context &c)
{
    auto d = c.open();
    GuardedBuffer first(2048), second(2048), out(2048), other(2048);
    fill_pattern(first.data(), 2048, 20);
    fill_pattern(second.data(), 2048, 21);
    auto r1 = c.reg(d, first), r2 = c.reg(d, second), ro = c.reg(d, out);
    auto k = c.key("again");
    expect(c.run_one(d, OpKind::put, k, {make_span(r1, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-1", "first put not READY");
    auto res = c.run_one(d, OpKind::remove, k);
    expect(res == KVBLOB_ROW_READY, "R-RMV-1",
           std::string("remove of a stored key answered ") + kvblob_row_result_name(res) + "; R-RMV-1 wants READY");
    res = c.run_one(d, OpKind::put, k, {make_span(r2, 0, 2048)});
    expect(res == KVBLOB_ROW_READY, "R-RMV-1",
           std::string("a put right after a READY remove of its key answered ") + kvblob_row_result_name(res) +
               "; the key is absent, so the put stores it (READY)");
    res = c.run_one(d, OpKind::get, k, {make_span(ro, 0, 2048)});
    expect(res == KVBLOB_ROW_READY, "R-RMV-1",
           std::string("a get of a key put again after its removal answered ") + kvblob_row_result_name(res) +
               ": the put answered READY for bytes it did not store");
    expect(std::memcmp(out.data(), second.data(), 2048) == 0, "R-RMV-1",
           "a get of a key put again after its removal returned other bytes than the second put's");
    auto d2 = c.open();
    auto r2o = c.reg(d2, other);
    res = c.run_one(d2, OpKind::get, k, {make_span(r2o, 0, 2048)});
    expect(res == KVBLOB_ROW_READY && std::memcmp(other.data(), second.data(), 2048) == 0, "R-RMV-1",
           std::string("another driver of the same store got ") + kvblob_row_result_name(res) +
               (res == KVBLOB_ROW_READY ? " with other bytes" : "") + " for a key put again after its removal");
}

}  // namespace

// The checks of this file, in run order.
void add_remove_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"remove.being-written", {"R-RMV-1"}, Level::must, KVBLOB_CAP_REMOVE | KVBLOB_CAP_PROBE,
         {"stage_foreign_writer", "release_staged"},
         "a remove of a key another client is writing is NOT_READY and leaves the writer's claim",
         remove_being_written},
        {"remove.then-miss", {"R-RMV-1"}, Level::must, KVBLOB_CAP_REMOVE | KVBLOB_CAP_PROBE, {},
         "a READY remove makes the key MISS; removing an absent key is MISS",
         remove_then_miss},
        {"remove.put-again", {"R-RMV-1"}, Level::must, KVBLOB_CAP_REMOVE, {},
         "a key put again right after its READY remove is stored anew: READY, and a get (also from another "
         "driver of the store) returns the new bytes",
         remove_put_again},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
