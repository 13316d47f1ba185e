#include "admission.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace kvblob {

namespace {

AdmissionVerdict refuse(std::string rule, std::string reason) { return {std::move(rule), std::move(reason), {}}; }

}  // namespace

AdmissionVerdict admit(const kvblob_caps_t &caps, OpKind kind, const kvblob_batch_t &batch,
                       const std::function<const RegionRecord *(kvblob_region_t *)> &find)
{
    if (batch.row_count == 0 || !batch.rows) return refuse("R-ADM-3", "an operation needs at least one row");
    if (batch.row_count > caps.max_rows_per_op)
        return refuse("R-ADM-3", std::to_string(batch.row_count) + " rows, over max_rows_per_op " +
                                     std::to_string(caps.max_rows_per_op));
    if (batch.hint && !(caps.flags & KVBLOB_CAP_HINTS))
        return refuse("R-ADM-7", "a hint, but the driver does not declare hints");
    const bool moves_bytes = kind == OpKind::put || kind == OpKind::get;
    AdmissionVerdict ok;
    std::unordered_set<std::string_view> keys;
    for (uint64_t r = 0; r < batch.row_count; ++r) {
        const auto &row = batch.rows[r];
        const std::string where = "row " + std::to_string(r);
        if (row.key_len == 0 || !row.key) return refuse("R-ADM-4", where + " has an empty key");
        if (row.key_len > caps.max_key_bytes)
            return refuse("R-ADM-4", where + " has a key of " + std::to_string(row.key_len) +
                                         " bytes, over max_key_bytes " + std::to_string(caps.max_key_bytes));
        if (!keys.insert({reinterpret_cast<const char *>(row.key), row.key_len}).second)
            return refuse("R-ADM-4", where + " repeats a key of this operation");
        if (!moves_bytes) {
            if (row.span_count) return refuse("R-ADM-5", where + ": probe and remove rows carry no spans");
            continue;
        }
        if (row.span_count == 0 || !row.spans) return refuse("R-ADM-5", where + " has no span");
        if (row.span_count > caps.max_spans_per_row)
            return refuse("R-ADM-5", where + " has " + std::to_string(row.span_count) + " spans; the driver takes " +
                                         std::to_string(caps.max_spans_per_row) +
                                         ((caps.flags & KVBLOB_CAP_MULTI_SPAN) ? "" : " (it does not declare multi_span)"));
        uint64_t total = 0;
        for (uint32_t s = 0; s < row.span_count; ++s) {
            const auto &span = row.spans[s];
            const RegionRecord *region = find(span.region);
            const std::string what = where + " span " + std::to_string(s);
            if (!region) return refuse("R-ADM-6", what + " names a region that is not registered");
            if (span.length == 0 || span.offset > region->size || span.length > region->size - span.offset)
                return refuse("R-ADM-6", what + " is not wholly inside its region of " + std::to_string(region->size) +
                                             " bytes");
            total += span.length;
            if (std::find(ok.regions.begin(), ok.regions.end(), span.region) == ok.regions.end())
                ok.regions.push_back(span.region);
        }
        if (total > caps.max_object_bytes)
            return refuse("R-ADM-5", where + " is " + std::to_string(total) + " bytes, over max_object_bytes " +
                                         std::to_string(caps.max_object_bytes));
    }
    return ok;
}

}  // namespace kvblob
