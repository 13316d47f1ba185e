// The breaking driver: a plugin that wraps the reference memory driver
// through its C table (as libfabric's prov/hook providers wrap a provider's
// ops) and breaks exactly one contract rule at that table, the one a mutant
// names. The reference is linked into the same library with its entry point
// renamed (kvblob_reference_negotiate, tests/breaking/CMakeLists.txt); the
// host sees this plugin's table, whose slots reach the reference's through a
// Break.
//
// A Break overrides the slots its rule lives in and forwards the rest:
// every member below defaults to calling the reference. The mutant is the
// one kvblob_broken_check() names (a constant in a pairing driver, the
// KVBLOB_MUTANT environment variable in the mutation plugin); an id no Break
// is registered for runs the reference unchanged.
//
// Most Breaks act on one slot (a status or a result rewritten, a limit
// declared other than the one enforced, an announcement dropped or
// doubled); the few whose rule lives inside a store reach it the same way,
// through the table: operations of the breaking driver's own (Hooked::run),
// memory of its own registered with the reference (Hooked::scratch), a
// second reference driver on the same store (Hooked::open_spare). The
// reference has no seam for them.
#pragma once

#include <kvblob/kvblob.h>

#include <functional>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "batch_copy.hpp"

extern "C" const char *kvblob_broken_check();
extern "C" kvblob_status kvblob_reference_negotiate(kvblob_negotiation_t *n);

namespace kvblob::breaking {

enum class Kind { put, get, probe, remove };

class Break;

// What the breaking driver knows of an operation it admitted.
struct OpInfo {
    Kind kind = Kind::put;
    uint64_t rows = 0;
    unsigned announced = 0;  // the events the reference announced for it (bits)
};

// One driver the host opened: the reference's driver inside, what the host
// lent, and the mutant breaking it.
struct Hooked {
    const kvblob_plugin_t *next = nullptr;      // the reference's table
    kvblob_driver_t *inner = nullptr;           // the reference's driver
    const kvblob_scenarios_t *scenarios = nullptr;  // the reference's hooks, once asked for
    kvblob_host_services_t host{};              // what the host lent, as far as its struct_size goes
    kvblob_host_services_t lent{};              // what the reference was lent: this driver's callbacks
    uint32_t abi_version = 0;
    kvblob_caps_t caps{};                       // as declared to the host
    std::unique_ptr<Break> brk;

    // The operations admitted and not released, for Breaks that act on an
    // operation's kind or rows. An announcement that comes before its
    // operation's admission returned (from inside put, or from a worker
    // meanwhile) waits in early until then.
    std::mutex ops_mu;
    std::map<kvblob_op_t *, OpInfo> ops;
    std::vector<std::pair<kvblob_op_t *, kvblob_notify_event>> early;
    // Every announcement the reference made, counted, and told to
    // wait_final (under ops_mu).
    uint64_t announcements = 0;
    std::condition_variable announced;
    // The regions the host registered, as it described them.
    std::map<kvblob_region_t *, kvblob_region_desc_t> regions;
    // The options the host opened this driver with.
    std::vector<std::pair<std::string, std::string>> options;

    // A second reference driver on the same store, for Breaks that admit
    // what the first refuses or stage what must outlive it: opened on first
    // use with the host's options; the operations it admitted are answered
    // by it; drained and closed with this driver unless keep_spare.
    kvblob_driver_t *spare = nullptr;
    std::map<kvblob_region_t *, kvblob_region_t *> spare_regions;  // the host's handle -> the spare's
    std::set<kvblob_op_t *> spare_ops;
    bool keep_spare = false;
    kvblob_driver_t *open_spare();
    // Submits batch to the spare instead (its spans' regions registered there too).
    kvblob_status submit_spare(Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err, uint32_t cap);
    void close_spare();
    // The reference driver that admitted op.
    kvblob_driver_t *of(kvblob_op_t *op);

    // Memory of the breaking driver's own, registered with the reference as
    // host memory, for spans the host's bytes must not reach (or come from):
    // zeroed, at least bytes long, valid until the driver closes. Let go of
    // before the reference's close (which refuses while regions remain).
    kvblob_region_t *scratch(uint64_t bytes, uint8_t **base = nullptr);
    std::mutex scratch_mu;
    std::vector<std::pair<std::unique_ptr<uint8_t[]>, kvblob_region_t *>> scratches;
    void drop_scratch();
    ~Hooked();

    // The host's callbacks, as the reference would call them.
    void log(kvblob_log_level level, const std::string &message) const;
    void notify(kvblob_op_t *op, kvblob_notify_event event) const;

    // The reference's slots.
    kvblob_status submit(Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err, uint32_t cap) const;
    kvblob_status poll(kvblob_op_t *op, uint32_t *is_final) { return next->poll(of(op), op, is_final); }
    kvblob_status results(kvblob_op_t *op, uint64_t first, uint64_t count, kvblob_row_status_t *out)
    {
        return next->results(of(op), op, first, count, out);
    }
    kvblob_access access(kvblob_op_t *op) { return next->access(of(op), op); }
    // Runs op to the end through the reference (for a Break acting on rows).
    bool wait_final(kvblob_op_t *op);
    // What is known of op (kind, rows); false when it is not admitted.
    bool info(kvblob_op_t *op, OpInfo &out);
    // Where span points in the host's memory (nullptr for a region not known).
    uint8_t *address(const kvblob_span_t &span);
    // Runs an operation of the breaking driver's own through the reference,
    // unseen by the host, to its end: the rows' results, empty when refused.
    std::vector<kvblob_row_result> run(Kind kind, const kvblob_batch_t &batch);
    // Whether each key is stored (a probe through the reference).
    std::vector<bool> stored(const std::vector<std::string> &keys);
};

// A submit's rows as the store held them before the reference saw the
// batch: a copy of the batch, and whether each row's key was stored
// (Hooked::stored). For the Breaks that act on stored or absent keys before
// passing the batch on.
struct StoredRows {
    BatchCopy copy;
    std::vector<bool> stored;
};
// The rows of a submit of kind wanted; empty for a submit of another kind
// or without rows.
inline std::optional<StoredRows> stored_rows(Hooked &h, Kind kind, Kind wanted, const kvblob_batch_t *batch)
{
    if (kind != wanted || !batch || !batch->rows) return std::nullopt;
    StoredRows rows{BatchCopy(*batch), {}};
    rows.stored = h.stored(rows.copy.keys);
    return rows;
}

// One way of breaking the reference at its table. Each member is the slot of
// the same name; the defaults forward to the reference.
class Break {
public:
    virtual ~Break() = default;

    // The ABI version whose table is answered when the host chose chosen.
    virtual uint32_t table_version(uint32_t chosen) { return chosen; }
    virtual kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                               uint32_t cap);
    virtual kvblob_status close(Hooked &h) { return h.next->close(h.inner); }
    virtual kvblob_status register_region(Hooked &h, const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                          char *err, uint32_t cap)
    {
        return h.next->register_region(h.inner, desc, out, err, cap);
    }
    virtual kvblob_status unregister_region(Hooked &h, kvblob_region_t *region)
    {
        return h.next->unregister_region(h.inner, region);
    }
    virtual kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                                 uint32_t cap)
    {
        return h.submit(kind, batch, out, err, cap);
    }
    virtual kvblob_status poll(Hooked &h, kvblob_op_t *op, uint32_t *is_final) { return h.poll(op, is_final); }
    virtual kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                                  kvblob_row_status_t *out)
    {
        return h.results(op, first, count, out);
    }
    virtual uint32_t row_message(Hooked &h, kvblob_op_t *op, uint64_t row, char *buf, uint32_t cap)
    {
        return h.next->row_message(h.of(op), op, row, buf, cap);
    }
    virtual kvblob_access access(Hooked &h, kvblob_op_t *op) { return h.access(op); }
    virtual kvblob_status cancel(Hooked &h, kvblob_op_t *op) { return h.next->cancel(h.of(op), op); }
    virtual kvblob_status release(Hooked &h, kvblob_op_t *op) { return h.next->release(h.of(op), op); }
    virtual kvblob_status drain(Hooked &h, uint64_t timeout_ns) { return h.next->drain(h.inner, timeout_ns); }
    // The reference announced op (only when the host lent notify).
    virtual void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) { h.notify(op, event); }
    virtual void log(Hooked &h, kvblob_log_level level, const char *message) { h.log(level, message); }
    // The scenario hooks (kvblob.scenarios/1) the breaking driver overrides.
    virtual kvblob_status stage_full_pool(Hooked &h) { return h.scenarios->stage_full_pool(h.inner); }
    virtual kvblob_status stage_foreign_writer(Hooked &h, const uint8_t *key, uint64_t n)
    {
        return h.scenarios->stage_foreign_writer(h.inner, key, n);
    }
    virtual kvblob_status release_staged(Hooked &h) { return h.scenarios->release_staged(h.inner); }
    virtual uint64_t echo_hint(Hooked &h, kvblob_op_t *op, void *buf, uint64_t capacity)
    {
        return h.scenarios->echo_hint(h.inner, op, buf, capacity);
    }
};

// The results of rows [first, first + count) of an operation of rows rows,
// given every row's: what a Break that rewrites results by the whole
// operation answers a page with.
void page(const std::vector<kvblob_row_status_t> &all, uint64_t first, uint64_t count, kvblob_row_status_t *out);

// Registers a Break under a mutant id, at static initialisation:
//   const Registered r("results.row-message", [] { return std::make_unique<RowMessageCountsNul>(); });
struct Registered {
    Registered(const char *id, std::function<std::unique_ptr<Break>()> make);
};

// The Break the current mutant names; a forwarding Break when none does.
std::unique_ptr<Break> make_break();
// Whether a Break is registered under id.
bool has_break(const std::string &id);

// The option given to open under key, or nullptr.
const char *option_value(const kvblob_open_args_t &args, const char *key);

}  // namespace kvblob::breaking
