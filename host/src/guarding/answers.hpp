// The host's check of a driver's answers: a result out of range, one that
// is not valid for the operation, or CANCELLED for a row nobody cancelled
// becomes FAULT; a final result that changes keeps its first value (results
// never change once final, R-ROW-1: the engine may have acted on it). The
// caller learns which rule the driver broke. Internal to the host.
//
// One row at a time, into the caller's own storage: fetching results costs
// no allocation per row, and words only for a row whose driver broke a rule.
#pragma once

#include <kvblob/kvblob.h>

#include <string>

#include "kvblob/host/types.hpp"

namespace kvblob {

struct CheckedRow {
    RowStatus status;
    const char *broken_rule = nullptr;  // null when the driver's answer stood
    std::string why;
};

// A first final answer that breaks no rule: a row result valid for the
// operation, CANCELLED only where a cancel was asked for. The usual case,
// checked inline on the path of every result (a call per row, building
// a CheckedRow, was a twentieth of a 4 KiB get through a tiered driver,
// whose tier's results the host checks too; measured with perf).
inline bool answer_stands(OpKind kind, bool cancel_requested, kvblob_row_result r)
{
    return r >= KVBLOB_ROW_READY && r <= KVBLOB_ROW_RESULT_LAST && !(kind == OpKind::put && r == KVBLOB_ROW_MISS) &&
           (r != KVBLOB_ROW_CANCELLED || cancel_requested);
}

// raw: what the driver answered for one row of a final operation
// (results_status is the slot's own status); first_final: what was answered
// for that row the first time, if anything was.
CheckedRow check_answer(OpKind kind, bool cancel_requested, kvblob_status results_status,
                        const kvblob_row_status_t &raw, const RowStatus *first_final);

}  // namespace kvblob
