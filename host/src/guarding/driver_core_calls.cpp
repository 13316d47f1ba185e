// DriverCore's enforced calls: each refuses before dispatch where the host
// can, and judges what the driver answered (admission.hpp, answers.hpp).
#include "driver_core.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "answers.hpp"
#include "kvblob/host/plugin.hpp"
#include "memory_kind.hpp"
#include "metrics/tick_clock.hpp"
#include "refusal.hpp"

namespace kvblob {

kvblob_region_t *DriverCore::register_region(const kvblob_region_desc_t &desc)
{
    if (desc.kind == KVBLOB_MEMORY_DEVICE && !(caps.flags & KVBLOB_CAP_DEVICE_MEMORY))
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8",
                        "DEVICE memory, but driver " + name + " does not declare device_memory");
    if (desc.kind != KVBLOB_MEMORY_HOST && desc.kind != KVBLOB_MEMORY_DEVICE)
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8", "unknown memory kind " + std::to_string(desc.kind));
    if (!desc.base || desc.size == 0)
        throw CallError(KVBLOB_E_REJECTED, "R-REG-1", "a region needs a base address and a positive size");
    if (const std::string problem = memory_kind_problem(desc); !problem.empty())
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8", problem);
    char err[512] = {0};
    kvblob_region_t *region = nullptr;
    kvblob_status st = call(&kvblob_plugin_t::register_region, "register_region", KVBLOB_E_INTERNAL, handle, &desc,
                             &region, static_cast<char *>(err), static_cast<uint32_t>(sizeof err));
    err[sizeof err - 1] = '\0';
    flush_thrown();
    if (st != KVBLOB_OK || !region)
        throw CallError(st == KVBLOB_OK ? KVBLOB_E_INTERNAL : st, desc.kind == KVBLOB_MEMORY_DEVICE ? "R-ADM-8" : "R-REG-1",
                        "driver " + name + " refused the registration: " + driver_words(err, sizeof err));
    Locked locked(*this);
    regions_[region] = RegionRecord{static_cast<const uint8_t *>(desc.base), desc.size, desc.kind, 0, false};
    if (metrics_) metrics_->region_registered(desc.size);
    return region;
}

kvblob_status DriverCore::unregister_region(kvblob_region_t *region)
{
    Locked locked(*this);
    return unregister_locked(region);
}

kvblob_status DriverCore::unregister_locked(kvblob_region_t *region)
{
    auto it = regions_.find(region);
    if (it == regions_.end()) return KVBLOB_E_INVALID;
    if (it->second.open_ops) {
        // Some of the operations naming it may have ended since last asked.
        for (auto &[op, record] : ops_)
            if (!record.access_settled &&
                std::find(record.regions.begin(), record.regions.end(), region) != record.regions.end())
                observe_access(op, record);
    }
    if (it->second.pinned) return KVBLOB_E_UNPROVABLE;  // R-REG-2: for good
    if (it->second.open_ops) return KVBLOB_E_BUSY;      // R-REG-1: the driver is not even asked
    kvblob_status st = call(&kvblob_plugin_t::unregister_region, "unregister_region", KVBLOB_E_INTERNAL, handle, region);
    if (st == KVBLOB_OK) {
        if (metrics_) metrics_->region_unregistered(it->second.size);
        regions_.erase(it);
    }
    return st;
}

// Stage 1 of a submit: the slot of kind, if the driver declares it (R-CAP-1).
DriverCore::SubmitSlot DriverCore::declared_slot(OpKind kind)
{
    SubmitSlot field = &kvblob_plugin_t::put;  // the four slots share one signature
    bool declared = true;
    switch (kind) {
    case OpKind::put: field = &kvblob_plugin_t::put; break;
    case OpKind::get: field = &kvblob_plugin_t::get; break;
    case OpKind::probe: field = &kvblob_plugin_t::probe, declared = caps.flags & KVBLOB_CAP_PROBE; break;
    case OpKind::remove: field = &kvblob_plugin_t::remove, declared = caps.flags & KVBLOB_CAP_REMOVE; break;
    }
    if (declared && table->*field) return field;
    if (metrics_) {
        Locked locked(*this);  // the submitted counter's writers hold it
        metrics_->submitted(kind);
        metrics_->refused(kind, "R-CAP-1");
    }
    throw CallError(KVBLOB_E_UNSUPPORTED, "R-CAP-1", std::string(to_string(kind)) + " is not declared by driver " + name,
                    true);
}

// Stage 2: the host's admission, before the driver is asked; the rule of a
// refusal is the one admission names.
AdmissionVerdict DriverCore::admitted(OpKind kind, const kvblob_batch_t &batch, Vouch vouched)
{
    Locked locked(*this);
    if (metrics_) metrics_->submitted(kind);
    const auto find = [&](kvblob_region_t *r) -> const RegionRecord * {
        auto it = regions_.find(r);
        return it == regions_.end() ? nullptr : &it->second;
    };
    AdmissionVerdict verdict = admit(caps, kind, batch, find, vouched == Vouch::distinct_keys);
    if (!verdict.rule.empty()) {
        if (metrics_) metrics_->refused(kind, verdict.rule);
        throw CallError(KVBLOB_E_REJECTED, verdict.rule,
                        std::string(to_string(kind)) + " refused before reaching driver " + name + ": " + verdict.reason,
                        true);
    }
    // Counted before dispatch, so no unregister can slip in meanwhile.
    for (auto *r : verdict.regions) ++regions_[r].open_ops;
    return verdict;
}

// Stage 3, when the driver did not admit: its regions given back after a
// refusal, held for good after anything else; the rule from the answer's
// structure (refusal.hpp). Caller holds mu_.
void DriverCore::throw_not_admitted(OpKind kind, kvblob_status st, const char *err, size_t err_size,
                                    const std::vector<kvblob_region_t *> &regions)
{
    // Only a refusal certifies that no memory was touched (R-ADM-1). A
    // slot that threw (taken as E_INTERNAL by call()) or answered any
    // other failure proves nothing: the memory its spans name stays
    // registered for good, as after unprovable access (R-REG-2).
    const DriverRefusal refusal = driver_refusal(st, err);
    for (auto *r : regions) {
        --regions_[r].open_ops;
        if (!refusal.refused) pin_locked(regions_[r]);
    }
    if (metrics_) metrics_->refused(kind, refusal.counted);
    const std::string words = driver_words(err, err_size);
    std::string what = std::string(to_string(kind)) + " refused by driver " + name + ": " + words;
    if (!refusal.refused) {
        if (metrics_) metrics_->contract_broken("R-ADM-1");
        const std::string answer = st == KVBLOB_OK ? std::string("OK without an operation") : kvblob_status_name(st);
        if (!regions.empty())
            queue_note(KVBLOB_LOG_MISBEHAVING,
                       "driver " + name + " broke R-ADM-1: its " + to_string(kind) + " answered " + answer +
                           ", not a refusal (REJECTED or CLOSED): nothing proves its memory was left alone, so its " +
                           std::to_string(regions.size()) +
                           " region(s) stay registered and their memory must stay alive for the life of the "
                           "process (R-REG-2)");
        what = std::string(to_string(kind)) + " failed in driver " + name + " (" + answer + ": " + words +
               "); not a refusal, so the regions it names stay held for good (R-ADM-1)";
    }
    throw CallError(st == KVBLOB_OK ? KVBLOB_E_INTERNAL : st, refusal.rule, what, refusal.refused);
}

kvblob_op_t *DriverCore::submit(OpKind kind, const kvblob_batch_t &batch, Vouch vouched)
{
    const uint64_t submitted_at = metrics_ ? tick_clock::now() : 0;
    const SubmitSlot field = declared_slot(kind);
    AdmissionVerdict verdict = admitted(kind, batch, vouched);
    char err[512] = {0};
    kvblob_op_t *op = nullptr;
    kvblob_status st = call(field, to_string(kind), KVBLOB_E_INTERNAL, handle, &batch, &op, static_cast<char *>(err),
                            static_cast<uint32_t>(sizeof err));
    err[sizeof err - 1] = '\0';
    Locked locked(*this);
    if (st != KVBLOB_OK || !op) throw_not_admitted(kind, st, err, sizeof err, verdict.regions);
    OpRecord &record = fresh_record(op);
    record.kind = kind;
    record.rows = batch.row_count;
    record.regions = std::move(verdict.regions);
    record.submitted_at = submitted_at;
    record.uniform_row_bytes = verdict.uniform_row_bytes;
    record.row_bytes = std::move(verdict.row_bytes);
    if (metrics_) metrics_->admitted();
    return op;
}

kvblob_access DriverCore::observe_access(kvblob_op_t *op, OpRecord &record)
{
    const kvblob_access a = call(&kvblob_plugin_t::access, "access", KVBLOB_ACCESS_OPEN, handle, op);
    if (record.access_settled) return a;
    if (a == KVBLOB_ACCESS_ENDED) {
        for (auto *r : record.regions)
            if (auto it = regions_.find(r); it != regions_.end() && it->second.open_ops) --it->second.open_ops;
        record.access_settled = true;
        // Seen ended at the first look after final: it stayed open no time
        // the host could see, and costs no clock reading.
        if (metrics_ && record.final_seen)
            metrics_->access_ended(record.kind, record.open_after_final
                                                    ? tick_clock::between(record.final_at, tick_clock::now())
                                                    : std::chrono::nanoseconds(0));
    } else if (a == KVBLOB_ACCESS_UNPROVABLE) {
        for (auto *r : record.regions)
            if (auto it = regions_.find(r); it != regions_.end()) pin_locked(it->second);
        record.access_settled = true;
        queue_note(KVBLOB_LOG_WARN, "driver " + name + ": an operation's access is unprovable; its " +
                                  std::to_string(record.regions.size()) +
                                  " region(s) stay registered and their memory must stay alive for the life of "
                                  "the process (R-REG-2)");
    } else if (a == KVBLOB_ACCESS_OPEN) {
        if (record.final_seen) record.open_after_final = true;
    } else {
        if (metrics_) metrics_->contract_broken("R-ACC-1");
        if (record.rules_logged.insert("R-ACC-1").second)
            queue_note(KVBLOB_LOG_MISBEHAVING, "driver " + name + " broke R-ACC-1: access answered " + std::to_string(a) +
                                             "; taken as still open");
        return KVBLOB_ACCESS_OPEN;
    }
    return a;
}

DriverCore::OpRecord &DriverCore::record_of(kvblob_op_t *op, const char *member)
{
    auto it = ops_.find(op);
    if (it == ops_.end())
        throw CallError(KVBLOB_E_INVALID, "R-OPS-1",
                        std::string(member) + ": not an operation the host holds for driver " + name +
                            " (released, or never admitted); the driver is not asked");
    return it->second;
}

bool DriverCore::is_final(kvblob_op_t *op)
{
    // The driver is asked without mu_ held: a poll may run the operation's
    // queued work in this thread (a waiter doing its own work, rather than
    // waiting for a busy machine to schedule the driver's worker), and the
    // host's other calls on this driver must not wait for that. The handle
    // is checked live first; its owner (an Operation) is the only one that
    // may release it, so it stays live across the unlocked call.
    bool seen_before = false;  // final, as seen before this poll was asked
    {
        Locked locked(*this);
        OpRecord &record = record_of(op, "is_final");
        ++record.unlocked_calls;
        seen_before = record.final_seen;
    }
    uint32_t fin = 0;
    const bool final = call(&kvblob_plugin_t::poll, "poll", KVBLOB_E_INTERNAL, handle, op, &fin) == KVBLOB_OK && fin != 0;
    Locked locked(*this);
    OpRecord &record = record_of(op, "is_final");
    --record.unlocked_calls;
    // "Not final" from a poll asked before any thread saw the operation
    // final is no step back, even where another thread's poll saw it final
    // meanwhile (this one ran first, then waited for mu_): it is judged
    // only against what was seen before it was asked (R-ROW-1), and the
    // answer is what is known now.
    if (!final && !seen_before) return record.final_seen;
    return judge_final(final, record);
}

void DriverCore::end_unlocked_call(kvblob_op_t *op)
{
    Locked locked(*this);
    if (auto it = ops_.find(op); it != ops_.end()) --it->second.unlocked_calls;
}

bool DriverCore::observe_final(kvblob_op_t *op, OpRecord &record)
{
    uint32_t fin = 0;
    const bool final = call(&kvblob_plugin_t::poll, "poll", KVBLOB_E_INTERNAL, handle, op, &fin) == KVBLOB_OK && fin != 0;
    return judge_final(final, record);
}

bool DriverCore::judge_final(bool final, OpRecord &record)
{
    if (metrics_ && final && !record.final_seen) {
        record.final_at = tick_clock::now();
        metrics_->until_final(record.kind, tick_clock::between(record.submitted_at, record.final_at));
    }
    if (final) record.final_seen = true;
    if (!final && record.final_seen) {
        if (metrics_) metrics_->contract_broken("R-ROW-1");
        if (record.rules_logged.insert("R-ROW-1 poll").second)
            queue_note(KVBLOB_LOG_MISBEHAVING,
                       "driver " + name + " broke R-ROW-1: poll went back from final; the operation stays final");
        return true;
    }
    return final;
}

kvblob_access DriverCore::access(kvblob_op_t *op)
{
    Locked locked(*this);
    return observe_access(op, record_of(op, "access"));
}

void DriverCore::results(kvblob_op_t *op, std::vector<RowStatus> &out)
{
    std::optional<Locked> locked(std::in_place, *this);
    if (!record_of(op, "results").final_seen) {
        // Not seen final yet: asked first without mu_ (is_final), since that
        // poll may run the operation's queued work, and the driver's log
        // calls made meanwhile must reach a sink free to call the host.
        locked.reset();
        is_final(op);
        locked.emplace(*this);
    }
    OpRecord &record = record_of(op, "results");
    const bool final = observe_final(op, record);
    // The driver's answers land in a buffer this thread keeps for the next
    // operation (a very large one gets its own, not kept): fetching results
    // allocates the vector returned, and the first final copy once.
    constexpr uint64_t kept_rows = 4096;
    thread_local std::vector<kvblob_row_status_t> kept;
    std::vector<kvblob_row_status_t> own;
    std::vector<kvblob_row_status_t> &raw = record.rows <= kept_rows ? kept : own;
    raw.assign(record.rows, kvblob_row_status_t{sizeof(kvblob_row_status_t), KVBLOB_ROW_PENDING, 0, 0});
    const kvblob_status st = record.rows ? call(&kvblob_plugin_t::results, "results", KVBLOB_E_INTERNAL, handle, op,
                                                 uint64_t{0}, record.rows, raw.data())
                                          : KVBLOB_OK;
    if (!final) {  // rows may still be pending; nothing is final to check yet
        out.resize(record.rows);
        for (size_t i = 0; i < raw.size(); ++i)
            out[i] = {st == KVBLOB_OK ? raw[i].result : KVBLOB_ROW_PENDING, raw[i].driver_code};
        return;
    }
    judged_rows(record, st, raw, out);
}

void DriverCore::judged_rows(OpRecord &record, kvblob_status st, const std::vector<kvblob_row_status_t> &raw,
                             std::vector<RowStatus> &out)
{
    out.resize(raw.size());
    const RowStatus *first = record.has_first_final ? record.first_final.data() : nullptr;
    // The first final answer is the one that stands (R-ROW-1): its rows are
    // counted, once, in the same pass that checks them.
    const bool count = !first && metrics_;
    std::array<uint64_t, KVBLOB_ROW_RESULT_LAST + 1> rows{};
    uint64_t ready_bytes = 0;
    const uint64_t *each_bytes = record.row_bytes.empty() ? nullptr : record.row_bytes.data();
    const auto tally = [&](size_t i) {
        if (count && static_cast<uint32_t>(out[i].result) <= KVBLOB_ROW_RESULT_LAST) {
            ++rows[static_cast<size_t>(out[i].result)];
            if (out[i].result == KVBLOB_ROW_READY) ready_bytes += each_bytes ? each_bytes[i] : record.uniform_row_bytes;
        }
    };
    for (size_t i = 0; i < raw.size(); ++i) {
        if (st == KVBLOB_OK && !first && answer_stands(record.kind, record.cancel_requested, raw[i].result)) {
            out[i] = {raw[i].result, raw[i].driver_code};
            tally(i);
            continue;
        }
        CheckedRow checked = check_answer(record.kind, record.cancel_requested, st, raw[i], first ? first + i : nullptr);
        out[i] = checked.status;
        tally(i);
        if (!checked.broken_rule) continue;
        if (metrics_) metrics_->contract_broken(checked.broken_rule);
        record.host_messages[i] = std::string("host: driver broke ") + checked.broken_rule + ": " + checked.why;
        if (record.rules_logged.insert(checked.broken_rule).second)
            queue_note(KVBLOB_LOG_MISBEHAVING, "driver " + name + " broke " + checked.broken_rule + " (row " +
                                             std::to_string(i) + "): " + checked.why);
    }
    if (count) metrics_->rows(record.kind, rows, ready_bytes);
    if (!record.has_first_final) {
        record.first_final.assign(out.begin(), out.end());  // into the memory a reused record kept
        record.has_first_final = true;
    }
}

void DriverCore::count_unread_rows(kvblob_op_t *op, OpRecord &record)
{
    if (record.has_first_final || !metrics_) return;
    std::vector<kvblob_row_status_t> raw(record.rows,
                                         kvblob_row_status_t{sizeof(kvblob_row_status_t), KVBLOB_ROW_PENDING, 0, 0});
    const kvblob_status st = record.rows ? call(&kvblob_plugin_t::results, "results", KVBLOB_E_INTERNAL, handle, op,
                                                 uint64_t{0}, record.rows, raw.data())
                                          : KVBLOB_OK;
    std::vector<RowStatus> unread;
    judged_rows(record, st, raw, unread);
}

void DriverCore::pin_locked(RegionRecord &region)
{
    if (std::exchange(region.pinned, true)) return;
    if (metrics_) metrics_->region_pinned(region.size);
}

std::string DriverCore::message(kvblob_op_t *op, uint64_t row)
{
    {
        Locked locked(*this);
        OpRecord &record = record_of(op, "message");
        if (row >= record.rows)
            throw CallError(KVBLOB_E_INVALID, "R-ROW-1",
                            "message: row " + std::to_string(row) + " is outside the operation's " +
                                std::to_string(record.rows) + " row(s); driver " + name + " is not asked");
        if (auto m = record.host_messages.find(row); m != record.host_messages.end()) return m->second;
        ++record.unlocked_calls;
    }
    char buf[max_row_message_bytes + 1] = {0};
    const uint32_t length = call(&kvblob_plugin_t::row_message, "row_message", uint32_t{0}, handle, op, row,
                                 static_cast<char *>(buf), static_cast<uint32_t>(sizeof buf));
    buf[sizeof buf - 1] = '\0';
    end_unlocked_call(op);
    return driver_words(buf, sizeof buf, length >= sizeof buf);
}

std::string DriverCore::driver_words(const char *text, size_t buffer_size, bool longer) const
{
    if (secrets.empty()) return text;
    // Cut where it filled the buffer, whatever length the driver claims.
    const bool cut = longer || std::strlen(text) + 1 >= buffer_size;
    return without_secrets(text, secrets, cut ? TextEnd::maybe_cut : TextEnd::whole);
}

kvblob_status DriverCore::cancel(kvblob_op_t *op)
{
    {
        Locked locked(*this);
        OpRecord &record = record_of(op, "cancel");
        record.cancel_requested = true;
        ++record.unlocked_calls;
    }
    const kvblob_status st = call(&kvblob_plugin_t::cancel, "cancel", KVBLOB_E_INTERNAL, handle, op);
    end_unlocked_call(op);
    return st;
}

kvblob_status DriverCore::release(kvblob_op_t *op)
{
    Locked locked(*this);
    return release_locked(op);
}

kvblob_status DriverCore::release_locked(kvblob_op_t *op)
{
    auto it = ops_.find(op);
    if (it == ops_.end()) return KVBLOB_E_INVALID;  // not the host's (any more): the driver is not asked
    if (it->second.unlocked_calls) return KVBLOB_E_BUSY;  // another thread's call is still in the driver
    const kvblob_access a = observe_access(op, it->second);
    if (a == KVBLOB_ACCESS_UNPROVABLE) return KVBLOB_E_UNPROVABLE;  // kept for good (R-OPS-1)
    if (a != KVBLOB_ACCESS_ENDED || !observe_final(op, it->second)) return KVBLOB_E_BUSY;  // the driver is not asked
    count_unread_rows(op, it->second);
    kvblob_status st = call(&kvblob_plugin_t::release, "release", KVBLOB_E_INTERNAL, handle, op);
    if (st == KVBLOB_OK) {
        keep_record(ops_.extract(it));
        if (metrics_) metrics_->released();
    }
    return st;
}

void DriverCore::abandon(kvblob_op_t *op)
{
    Locked locked(*this);
    kvblob_status st = release_locked(op);
    if (st == KVBLOB_E_BUSY) {
        // Not final or access still open: stop what has not started and keep
        // the handle until shutdown, which releases it after its drain.
        if (auto it = ops_.find(op); it != ops_.end()) it->second.cancel_requested = true;
        call(&kvblob_plugin_t::cancel, "cancel", KVBLOB_E_INTERNAL, handle, op);
        st = release_locked(op);
    }
    // Any answer but OK leaves the handle the driver's: a release that threw
    // or failed proves nothing either. INVALID: not the host's to keep.
    if (st != KVBLOB_OK && st != KVBLOB_E_INVALID) parked_.push_back(op);
}

}  // namespace kvblob
