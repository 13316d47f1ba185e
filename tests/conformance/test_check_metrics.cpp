// The "metrics" record a check's process signs and the runner turns into
// JSON (conformance-runner/src/check_metrics.hpp): only counters it can
// vouch for reach the report, whatever the record holds.
#include <doctest/doctest.h>

#include "check_metrics.hpp"
#include "kvblob/host/metrics.hpp"

using namespace kvblob::conformance;

TEST_CASE("a check's metrics record: counted, read back, and nothing else written into the JSON")
{
    start_counting_check();
    auto *op = reinterpret_cast<kvblob_op_t *>(0x10);
    count_submit(op, kvblob::OpKind::get, KVBLOB_OK);
    count_submit(nullptr, kvblob::OpKind::put, KVBLOB_E_REJECTED);
    std::vector<kvblob_row_status_t> rows(3, kvblob_row_status_t{sizeof(kvblob_row_status_t), KVBLOB_ROW_MISS, 0, 0});
    rows[0].result = KVBLOB_ROW_READY;
    count_results(op, rows);
    count_results(op, rows);  // read again: counted once
    const std::string record = check_metrics_record();
    CHECK(record == "metrics get.rows.MISS=2 get.rows.READY=1 get.submitted=1 put.refused.E_REJECTED=1 put.submitted=1");
    CHECK(check_metrics_json(check_metrics_of({"PASS\n", record, "left 0 0"})) ==
          R"({"get.rows.MISS":2,"get.rows.READY":1,"get.submitted":1,"put.refused.E_REJECTED":1,"put.submitted":1})");

    // Words that are not NAME=DIGITS, quotes, braces or a value past 64 bits
    // are dropped; the last record wins.
    const std::string odd = R"(metrics a"b=1 c}=2 x=-1 y=1e3 z=99999999999999999999 ok.name-1=7)";
    CHECK(check_metrics_json(check_metrics_of({"metrics old=1", odd})) == R"({"ok.name-1":7})");
    CHECK(check_metrics_json(check_metrics_of({"PASS\n"})) == "null");
    CHECK(is_check_metrics_record("metrics"));
    CHECK_FALSE(is_check_metrics_record("metricsx=1"));
    kvblob::keep_metrics_of_closed_drivers(false);  // this process is not a check's
}
