#include "mooncake_driver.hpp"

#include <kvblob/support/access_bound.hpp>
#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>
#include <kvblob/support/scenario_glue.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kvblob::mooncake {

extern const support::OptionTable mooncake_options;  // plugin.cpp

std::unique_ptr<MooncakeDriver> MooncakeDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    support::ParsedOptions o(mooncake_options, args);
    const unsigned workers = support::worker_count(o);
    const uint64_t replicas = support::positive(o, "replica_num");
    caps.flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE;
    support::apply_limits(o, caps);
    // run() ends an operation's access before its results are final: R-ACC-2's bound is 0.
    support::declare_access_bound(args, caps, std::chrono::nanoseconds(0));
    if (caps.max_spans_per_row != 1)
        throw support::OptionError("option 'max_spans' must be 1: Mooncake moves one buffer per key");
    const int64_t lease_wait_ms = o.integer("remove_lease_wait_ms");
    if (lease_wait_ms < 0) throw support::OptionError("option 'remove_lease_wait_ms' must be 0 or more");
    const int64_t lease_ttl_ms = o.integer("lease_ttl_ms");
    if (lease_ttl_ms < 0) throw support::OptionError("option 'lease_ttl_ms' must be 0 or more");
    // The store takes 0 (nothing) or at least 1 KiB for each size.
    for (const char *name : {"global_segment_size", "local_buffer_size"})
        if (const uint64_t v = o.bytes(name); v != 0 && v < 1024)
            throw support::OptionError(std::string("option '") + name + "' must be 0 or at least 1K (Mooncake's rule)");

    std::unique_ptr<StoreLibrary> library;
    try {
        library = std::make_unique<StoreLibrary>(o.text("library"));
    } catch (const std::exception &e) {
        throw support::OpenError(KVBLOB_E_STORE, e.what());
    }
    const StoreApi &api = library->api();
    if (api.remove) caps.flags |= KVBLOB_CAP_REMOVE;
    mooncake_store_t store = api.create();
    if (!store) throw support::OpenError(KVBLOB_E_STORE, "mooncake_store_create returned no store");
    const std::string where =
        "master " + o.text("master_server_address") + " and metadata server " + o.text("metadata_server");
    const int setup = api.setup(store, o.text("local_hostname").c_str(), o.text("metadata_server").c_str(),
                                o.bytes("global_segment_size"), o.bytes("local_buffer_size"),
                                o.text("protocol").c_str(), o.text("device_name").c_str(),
                                o.text("master_server_address").c_str());
    if (setup != 0) {
        api.destroy(store);
        throw support::OpenError(KVBLOB_E_STORE, "mooncake_store_setup with " + where + " failed: " + code_name(setup));
    }
    if (const int health = api.health_check(store); health != 0) {
        api.destroy(store);
        throw support::OpenError(KVBLOB_E_STORE,
                                 "mooncake_store_health_check after setup with " + where + " failed: " + code_name(health));
    }
    return std::unique_ptr<MooncakeDriver>(new MooncakeDriver(caps, args.host, std::move(library), store,
                                                              static_cast<unsigned>(replicas), o.text("prefix"),
                                                              workers, std::chrono::milliseconds(lease_wait_ms),
                                                              std::chrono::milliseconds(lease_ttl_ms)));
}

MooncakeDriver::MooncakeDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host,
                               std::unique_ptr<StoreLibrary> library, mooncake_store_t store, unsigned replicas,
                               std::string prefix, unsigned workers, std::chrono::milliseconds lease_wait,
                               std::chrono::milliseconds lease_ttl)
    : QueuedDriver(caps, host), library_(std::move(library)), api_(library_->api()), store_(store),
      replicas_(replicas), prefix_(std::move(prefix)), lease_wait_(lease_wait), own_leases_(lease_ttl)
{
    start_workers("kvblob-mooncake", workers);
}

MooncakeDriver::~MooncakeDriver()
{
    stop();
    if (api_.fake_stage) api_.fake_stage(store_, "release", "");
    api_.destroy(store_);
}

kvblob_status MooncakeDriver::store_register(support::Region &region, std::string &why)
{
    if (region.kind != KVBLOB_MEMORY_HOST) {
        why = "[R-ADM-8] this driver moves HOST memory only";
        return KVBLOB_E_REJECTED;
    }
    const auto base = reinterpret_cast<uintptr_t>(region.base);
    std::lock_guard lock(registered_mu_);
    // Mooncake's transfer engine refuses a registration that overlaps one
    // it holds (and answers only INVALID_PARAMS): say so, with both ranges.
    if (auto next = registered_.lower_bound(base + region.size); next != registered_.begin()) {
        const auto &[start, size] = *std::prev(next);
        if (start + size > base) {
            std::ostringstream msg;
            msg << "Mooncake's transfer engine refuses a region overlapping one registered already (its rule: no "
                   "overlapped memory regions): [" << region.base << ", +" << region.size << ") overlaps ["
                << reinterpret_cast<void *>(start) << ", +" << size << ")";
            why = msg.str();
            return KVBLOB_E_REJECTED;
        }
    }
    const int rc = api_.register_buffer(store_, region.base, region.size);
    if (rc != 0) {
        why = "mooncake_store_register_buffer: " + code_name(rc);
        return KVBLOB_E_STORE;
    }
    registered_.emplace(base, region.size);
    return KVBLOB_OK;
}

void MooncakeDriver::store_unregister(support::Region &region)
{
    if (const int rc = api_.unregister_buffer(store_, region.base); rc != 0) {
        // The store still holds it: keep it in the ledger, so an overlap
        // is named rather than met as INVALID_PARAMS.
        log(KVBLOB_LOG_WARN, "mooncake_store_unregister_buffer: " + code_name(rc));
        return;
    }
    std::lock_guard lock(registered_mu_);
    registered_.erase(reinterpret_cast<uintptr_t>(region.base));
}

std::string MooncakeDriver::store_key(const std::string &key) const
{
    bool printable = true;
    for (unsigned char c : key) printable = printable && c >= 0x20 && c < 0x7f;
    if (printable) return prefix_ + "k:" + key;
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = prefix_ + "x:";
    for (unsigned char c : key) {
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

// ---- execution ------------------------------------------------------------

void MooncakeDriver::run(Op &op)
{
    std::vector<size_t> rows;
    for (size_t i = 0; i < op.rows.size(); ++i)
        if (begin_row(op, i)) rows.push_back(i);
    if (!rows.empty()) {
        try {
            switch (op.kind) {
            case OpKind::put: put(op, rows); break;
            case OpKind::get: get(op, rows); break;
            case OpKind::probe: probe(op, rows); break;
            case OpKind::remove: remove(op, rows); break;
            }
        } catch (const std::exception &e) {
            for (size_t i : rows)
                if (op.rows[i].result.load() == KVBLOB_ROW_PENDING)
                    set_row(op, i, KVBLOB_ROW_FAULT, 0, std::string("driver error: ") + e.what());
        }
    }
    end_access(op);
    finish(op);  // the last touch: op may be released from here on
}

MooncakeDriver::BatchArgs MooncakeDriver::batch_args(const Op &op, const std::vector<size_t> &rows) const
{
    BatchArgs a;
    for (size_t i : rows) {
        a.keys.push_back(store_key(op.rows[i].key));
        if (op.rows[i].spans.empty()) continue;  // probe, remove: keys alone
        a.buffers.push_back(op.rows[i].spans[0].data);
        a.sizes.push_back(op.rows[i].spans[0].length);
    }
    for (const auto &k : a.keys) a.key_ptrs.push_back(k.c_str());  // keys no longer move
    return a;
}

namespace {

using Clock = std::chrono::steady_clock;

// Whether a call that began at t0 answered soon enough that the store's
// completion timeout cannot have given up on a transfer (answers.hpp).
bool settled_since(Clock::time_point t0) { return Clock::now() - t0 < kTransferGiveUp; }

// Past the end of a lease by the driver's clock, before the master's
// (another process's, perhaps another machine's) has surely seen it end.
constexpr std::chrono::milliseconds kLeaseClockSlack{50};

// The put the driver calls (store_api.hpp), as its messages name it.
constexpr const char *kPutCall = "kvblob_mooncake_batch_put_from_reporting_existing";

}  // namespace

void MooncakeDriver::set_answer(Op &op, size_t row, Answer answer, int64_t code)
{
    if (answer.access_unprovable) op.unprovable = true;  // before end_access: the regions stay pinned
    const int32_t row_code = code < 0 && code >= INT32_MIN ? static_cast<int32_t>(code) : 0;
    set_row(op, row, answer.result, row_code, std::move(answer.message));
}

void MooncakeDriver::put(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    // A key another put of this driver is writing: NOT_READY, unasked.
    WritingKeys::Claim claim(writing_, a.keys);
    std::vector<size_t> to_put;  // indexes into rows
    for (size_t k = 0; k < rows.size(); ++k) {
        if (claim.claimed[k]) to_put.push_back(k);
        else
            set_row(op, rows[k], KVBLOB_ROW_NOT_READY, 0,
                    "another operation of this driver is writing this key and has not finished");
    }
    if (to_put.empty()) return;
    std::vector<const char *> keys;
    std::vector<void *> buffers;
    std::vector<size_t> sizes;
    for (size_t k : to_put) {
        keys.push_back(a.key_ptrs[k]);
        buffers.push_back(a.buffers[k]);
        sizes.push_back(a.sizes[k]);
    }
    // The put that answers OBJECT_ALREADY_EXISTS for a key that exists,
    // complete or being written by another client, where Mooncake's own
    // answers 0 (plugins/mooncake/library/): 0 means this call stored the
    // bytes, so only keys that existed need a question.
    std::vector<int> results(to_put.size(), kUnwritten);
    ReplicateConfig config{replicas_, 0, 0, nullptr, 0};
    const auto t0 = Clock::now();
    const int rc = api_.batch_put_reporting_existing(store_, keys.data(), buffers.data(), sizes.data(),
                                                     to_put.size(), &config, results.data());
    const bool settled = settled_since(t0);
    std::vector<size_t> existed;  // indexes into rows
    for (size_t e = 0; e < to_put.size(); ++e) {
        const size_t row = rows[to_put[e]];
        if (rc != 0)
            set_answer(op, row, whole_call_failure(kPutCall, rc, true), rc);
        else if (results[e] == kUnwritten)
            set_answer(op, row, unwritten_slot(kPutCall, true), 0);
        else if (results[e] == OK)
            set_answer(op, row, {KVBLOB_ROW_READY, {}}, 0);
        else if (results[e] == OBJECT_ALREADY_EXISTS)
            existed.push_back(to_put[e]);
        else
            set_answer(op, row, put_answer(results[e], settled), results[e]);
    }
    if (!existed.empty()) answer_existing(op, rows, a, existed);
}

void MooncakeDriver::answer_existing(Op &op, const std::vector<size_t> &rows, const BatchArgs &a,
                                     const std::vector<size_t> &existed)
{
    // Complete, or still another writer's? An empty get (no buffer, 0
    // bytes) tells, moving nothing and leasing only a complete object.
    std::vector<const char *> keys;
    for (size_t k : existed) keys.push_back(a.key_ptrs[k]);
    std::vector<void *> no_buffers(existed.size(), nullptr);
    std::vector<size_t> no_sizes(existed.size(), 0);
    std::vector<int64_t> stored(existed.size(), kUnwritten);
    const int rc =
        api_.batch_get_into(store_, keys.data(), no_buffers.data(), no_sizes.data(), existed.size(), stored.data());
    for (size_t e = 0; e < existed.size(); ++e) {
        const size_t k = existed[e];
        if (rc != 0) {
            Answer answer = whole_call_failure("mooncake_store_batch_get_into", rc, false);
            answer.message = "asking whether the key the put found existing is complete: " + answer.message +
                             "; nothing was put";
            set_answer(op, rows[k], std::move(answer), rc);
        } else if (stored[e] == kUnwritten) {
            set_answer(op, rows[k], unwritten_slot("mooncake_store_batch_get_into", false), 0);
        } else {
            Answer answer = existing_answer(stored[e]);
            if (answer.result == KVBLOB_ROW_READY) own_leases_.took(a.keys[k]);  // the master leased it
            set_answer(op, rows[k], std::move(answer), stored[e]);
        }
    }
}

void MooncakeDriver::get(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    std::vector<int64_t> read(rows.size(), kUnwritten);
    const auto t0 = Clock::now();
    const int rc =
        api_.batch_get_into(store_, a.key_ptrs.data(), a.buffers.data(), a.sizes.data(), rows.size(), read.data());
    const bool settled = settled_since(t0);
    for (size_t k = 0; k < rows.size(); ++k) {
        if (rc != 0)
            set_answer(op, rows[k], whole_call_failure("mooncake_store_batch_get_into", rc, true), rc);
        else if (read[k] == kUnwritten)
            set_answer(op, rows[k], unwritten_slot("mooncake_store_batch_get_into", true), 0);
        else {
            // Every answer but these found the object complete, and leased it.
            if (read[k] != OBJECT_NOT_FOUND && read[k] != REPLICA_IS_NOT_READY) own_leases_.took(a.keys[k]);
            set_answer(op, rows[k], get_answer(read[k], op.rows[rows[k]].total, settled), read[k]);
        }
    }
}

void MooncakeDriver::probe(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    std::vector<int> exists(rows.size(), kUnwritten);
    const int rc = api_.batch_is_exist(store_, a.key_ptrs.data(), a.key_ptrs.size(), exists.data());
    for (size_t k = 0; k < rows.size(); ++k) {
        if (rc != 0)
            set_answer(op, rows[k], whole_call_failure("mooncake_store_batch_is_exist", rc, false), rc);
        else if (exists[k] == kUnwritten)
            set_answer(op, rows[k], unwritten_slot("mooncake_store_batch_is_exist", false), 0);
        else if (exists[k] == 0) {
            const int64_t size = api_.get_size(store_, a.key_ptrs[k]);
            if (size >= 0) own_leases_.took(a.keys[k]);  // completed in between: leased
            set_answer(op, rows[k], probe_answer(0, size), size);
        } else {
            if (exists[k] == 1) own_leases_.took(a.keys[k]);
            set_answer(op, rows[k], probe_answer(exists[k], 0), exists[k]);
        }
    }
}

void MooncakeDriver::remove(Op &op, const std::vector<size_t> &rows)
{
    for (size_t i : rows) {
        const std::string key = store_key(op.rows[i].key);
        // Never forced: a lease protects a reader's transfer in flight. A
        // lease this driver's own get or probe took protects nothing once
        // that call returned, but the master cannot tell it from another
        // reader's: the remove waits it out (until it runs out, by the
        // driver's own clock), and waits out any other lease only up to
        // remove_lease_wait, then answers NOT_READY.
        const auto start = Clock::now();
        auto deadline = start + lease_wait_;
        if (auto own = own_leases_.until(key); own && *own + kLeaseClockSlack > deadline)
            deadline = *own + kLeaseClockSlack;
        int rc = api_.remove(store_, key.c_str(), 0);
        for (auto pause = std::chrono::milliseconds(5);
             rc == OBJECT_HAS_LEASE && Clock::now() < deadline && !op.cancel_requested.load();
             pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
            // A retry's pause while the lease runs out, not an ordering.
            std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
            rc = api_.remove(store_, key.c_str(), 0);
        }
        set_answer(op, i, remove_answer(rc), rc);
    }
}

// ---- scenario hooks -------------------------------------------------------------

namespace {

// What a real store offers: the held get, and its release.
constexpr kvblob_scenarios_t held_gets_only()
{
    kvblob_scenarios_t t = support::ScenarioGlue<MooncakeDriver>::table();
    t.stage_foreign_writer = nullptr;
    t.stage_full_pool = nullptr;
    t.stage_failing_read = nullptr;
    t.stage_unprovable = nullptr;
    return t;
}
// Static storage: inside the plugin's image, as the loader requires.
constexpr kvblob_scenarios_t real_store_scenarios = held_gets_only();

}  // namespace

const kvblob_scenarios_t *MooncakeDriver::scenarios_offered() const
{
    return api_.fake_stage ? &support::ScenarioGlue<MooncakeDriver>::instance : &real_store_scenarios;
}

kvblob_status MooncakeDriver::stage(const char *what, const std::string &key)
{
    if (!api_.fake_stage) return KVBLOB_E_UNSUPPORTED;
    return api_.fake_stage(store_, what, key.empty() ? "" : store_key(key).c_str()) == 0 ? KVBLOB_OK
                                                                                          : KVBLOB_E_INVALID;
}

kvblob_status MooncakeDriver::release_staged()
{
    // A real store staged nothing of its own: only held gets to release.
    const kvblob_status st = api_.fake_stage ? stage("release", {}) : KVBLOB_OK;
    release_held_gets();
    return st;
}

}  // namespace kvblob::mooncake
