// remove.*: R-RMV-1, what a remove answers and leaves behind.
#include "checks_common.hpp"

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
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
