// The host's check of a driver's answers: a result out of range, one that
// is not valid for the operation, or CANCELLED for a row nobody cancelled
// becomes FAULT; a final result that changes keeps its first value (results
// never change once final, R-ROW-1: the engine may have acted on it). The
// caller learns which rule the driver broke. Internal to the host.
#pragma once

#include <kvblob/kvblob.h>

#include <optional>
#include <string>
#include <vector>

#include "kvblob/host/driver.hpp"

namespace kvblob {

struct CheckedRow {
    RowStatus status;
    std::string broken_rule;  // empty when the driver's answer stood
    std::string why;
};

// raw: what the driver answered for a final operation (results_status is the
// slot's own status); first_final: what was answered the first time, if any.
std::vector<CheckedRow> check_answers(OpKind kind, bool cancel_requested, kvblob_status results_status,
                                      const std::vector<kvblob_row_status_t> &raw,
                                      const std::optional<std::vector<RowStatus>> &first_final);

}  // namespace kvblob
