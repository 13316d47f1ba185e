#include "answers.hpp"

namespace kvblob {

CheckedRow check_answer(OpKind kind, bool cancel_requested, kvblob_status results_status,
                        const kvblob_row_status_t &raw, const RowStatus *first_final)
{
    CheckedRow row;
    const kvblob_row_result r = raw.result;
    row.status = {r, raw.driver_code};
    auto fault = [&](const char *rule, std::string why) {
        row.status = {KVBLOB_ROW_FAULT, raw.driver_code};
        row.broken_rule = rule;
        row.why = std::move(why);
    };
    if (results_status != KVBLOB_OK)
        fault("R-ROW-1", std::string("results answered ") + kvblob_status_name(results_status));
    else if (r < KVBLOB_ROW_READY || r > KVBLOB_ROW_RESULT_LAST)
        fault("R-ROW-1", "result " + std::to_string(r) + " is not a row result of a final operation");
    else if (kind == OpKind::put && r == KVBLOB_ROW_MISS)
        fault("R-ROW-1", "MISS is never a put's result");
    else if (r == KVBLOB_ROW_CANCELLED && !cancel_requested)
        fault("R-CAN-1", "CANCELLED, but nobody cancelled the operation");
    if (first_final && first_final->result != row.status.result) {
        row.why = std::string("final result changed from ") + kvblob_row_result_name(first_final->result) + " to " +
                  kvblob_row_result_name(row.status.result) + "; the first stands";
        row.status = *first_final;
        row.broken_rule = "R-ROW-1";
    }
    return row;
}

}  // namespace kvblob
