// scenario.*: what a store's staged conditions (a foreign writer, a full
// pool, a failing read) make of a row's result, through the
// kvblob.scenarios/1 hooks.
#include "common.hpp"

namespace kvblob::conformance {

namespace {

void scenario_foreign_writer(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(1024);
    auto r = c.reg(d, buf);
    auto k = c.key("fw");
    c.stage(d, "stage_foreign_writer", k, "R-ROW-2");
    auto res = c.run_one(d, OpKind::get, k, {make_span(r, 0, 1024)});
    expect(res == KVBLOB_ROW_NOT_READY, "R-ROW-2",
           std::string("get of a key being written is ") + kvblob_row_result_name(res));
    res = c.run_one(d, OpKind::put, k, {make_span(r, 0, 1024)});
    expect(res == KVBLOB_ROW_NOT_READY, "R-ROW-2",
           std::string("put of a key being written is ") + kvblob_row_result_name(res));
}

void scenario_full_pool(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(1024);
    auto r = c.reg(d, buf);
    c.stage(d, "stage_full_pool", "R-ROW-2");
    auto res = c.run_one(d, OpKind::put, c.key("full"), {make_span(r, 0, 1024)});
    expect(res == KVBLOB_ROW_DECLINED, "R-ROW-2",
           std::string("put into a full pool is ") + kvblob_row_result_name(res));
}

void scenario_failing_read(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(1024);
    auto r = c.reg(d, buf);
    auto k = c.key("fr");
    c.run_one(d, OpKind::put, k, {make_span(r, 0, 1024)});
    c.stage(d, "stage_failing_read", k, "R-ROW-4");
    auto res = c.run_one(d, OpKind::get, k, {make_span(r, 0, 1024)});
    expect(res == KVBLOB_ROW_FAULT, "R-ROW-4",
           std::string("a failing read is ") + kvblob_row_result_name(res) + ", not FAULT");
}

void scenario_foreign_writer_probe(Context &c)
{
    auto d = c.open();
    auto k = c.key("fw");
    c.stage(d, "stage_foreign_writer", k, "R-ROW-2");
    auto res = c.run_one(d, OpKind::probe, k);
    expect(res == KVBLOB_ROW_NOT_READY, "R-ROW-2",
           std::string("probe of a key being written is ") + kvblob_row_result_name(res));
    c.stage(d, "release_staged", "R-ROW-2");
    c.require_absent_not_ready(d, "the foreign writer left nothing behind", OpKind::probe);
    res = c.run_one(d, OpKind::probe, k);
    expect(res != KVBLOB_ROW_READY && res != KVBLOB_ROW_NOT_READY, "R-ROW-2",
           std::string("after the foreign writer let go, probe of its key is ") +
               kvblob_row_result_name(res));
}

void scenario_close_releases(Context &c)
{
    auto keep = c.open();  // keeps the store open
    GuardedBuffer buf(1024);
    auto r = c.reg(keep, buf);
    auto k = c.key("fw");
    {
        // Staged by hand, not through the battery, which would release it.
        Driver staging = c.open();
        const auto st = staging.scenarios()->stage_foreign_writer(
            staging.handle(), reinterpret_cast<const uint8_t *>(k.data()), k.size());
        expect(st == KVBLOB_OK, "R-ROW-2",
               std::string("stage_foreign_writer answered ") + kvblob_status_name(st));
        expect(staging.shutdown(std::chrono::seconds(10)) == KVBLOB_OK, "R-CLS-1",
               "the driver that staged could not be closed");
    }
    auto res = c.run_one(keep, OpKind::put, k, {make_span(r, 0, 1024)});
    expect(res == KVBLOB_ROW_READY, "R-ROW-2",
           std::string("after the driver that staged a foreign writer closed, a put of its key from "
                       "another driver is ") +
               kvblob_row_result_name(res));
}

}  // namespace

// The checks of this file, in run order.
void add_scenario_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"scenario.foreign-writer", {"R-ROW-2"}, Level::must, 0, {"stage_foreign_writer", "release_staged"},
         "a key another client is writing is NOT_READY, a result and not a fault",
         scenario_foreign_writer},
        {"scenario.full-pool", {"R-ROW-2"}, Level::must, 0, {"stage_full_pool", "release_staged"},
         "a put into a full pool is DECLINED",
         scenario_full_pool},
        {"scenario.failing-read", {"R-ROW-4"}, Level::must, 0, {"stage_failing_read", "release_staged"},
         "a read that fails inside the store is FAULT, never MISS",
         scenario_failing_read},
        {"scenario.foreign-writer.probe", {"R-ROW-2"}, Level::must, KVBLOB_CAP_PROBE,
         {"stage_foreign_writer", "release_staged"},
         "a probe of a key another client is writing is NOT_READY; once the writer is gone, the key is "
         "absent",
         scenario_foreign_writer_probe},
        {"scenario.close-releases", {"R-ROW-2"}, Level::must, 0, {"stage_foreign_writer", "release_staged"},
         "a scenario lives no longer than the driver that staged it: once it closed, another driver on "
         "the store puts the key",
         scenario_close_releases},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
