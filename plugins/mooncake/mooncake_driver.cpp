#include "mooncake_driver.hpp"

#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>

#include <stdexcept>

#include "answers.hpp"

namespace kvblob::mooncake {

extern const kvblob_option_desc_t *const mooncake_options;
extern const uint64_t mooncake_option_count;

std::unique_ptr<MooncakeDriver> MooncakeDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    support::ParsedOptions o(mooncake_options, mooncake_option_count, args);
    const unsigned workers = support::worker_count(o);
    const uint64_t replicas = support::positive(o, "replica_num");
    caps.flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE;
    support::apply_limits(o, caps);
    if (caps.max_spans_per_row != 1)
        throw support::OptionError("option 'max_spans' must be 1: Mooncake moves one buffer per key");

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
    const int setup = api.setup(store, o.text("local_hostname").c_str(), o.text("metadata_server").c_str(),
                                o.bytes("global_segment_size"), o.bytes("local_buffer_size"),
                                o.text("protocol").c_str(), o.text("device_name").c_str(),
                                o.text("master_server_address").c_str());
    if (setup != 0 || api.health_check(store) != 0) {
        api.destroy(store);
        throw support::OpenError(KVBLOB_E_STORE,
                                 "mooncake_store_setup with master " + o.text("master_server_address") +
                                     " and metadata server " + o.text("metadata_server") + " failed: " +
                                     code_name(setup));
    }
    return std::unique_ptr<MooncakeDriver>(new MooncakeDriver(caps, args.host, std::move(library), store,
                                                              static_cast<unsigned>(replicas), o.text("prefix"),
                                                              workers));
}

MooncakeDriver::MooncakeDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host,
                               std::unique_ptr<StoreLibrary> library, mooncake_store_t store, unsigned replicas,
                               std::string prefix, unsigned workers)
    : DriverBase(caps, host), library_(std::move(library)), api_(library_->api()), store_(store),
      replicas_(replicas), prefix_(std::move(prefix))
{
    workers_.start(workers);
}

MooncakeDriver::~MooncakeDriver()
{
    stop();
    if (api_.fake_stage) api_.fake_stage(store_, "release", "");
    api_.destroy(store_);
}

void MooncakeDriver::stop() { workers_.stop(); }

kvblob_status MooncakeDriver::store_register(support::Region &region, std::string &why)
{
    if (region.kind != KVBLOB_MEMORY_HOST) {
        why = "[R-ADM-8] this driver moves HOST memory only";
        return KVBLOB_E_REJECTED;
    }
    const int rc = api_.register_buffer(store_, region.base, region.size);
    if (rc == 0) return KVBLOB_OK;
    why = "mooncake_store_register_buffer: " + code_name(rc);
    return KVBLOB_E_STORE;
}

void MooncakeDriver::store_unregister(support::Region &region)
{
    if (const int rc = api_.unregister_buffer(store_, region.base); rc != 0)
        log(KVBLOB_LOG_WARN, "mooncake_store_unregister_buffer: " + code_name(rc));
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

void MooncakeDriver::start(Op &op)
{
    if (held_gets_.park(op)) return;
    workers_.push([this, &op] { run(op); });
}

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

namespace {

}  // namespace

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

void MooncakeDriver::put(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    std::vector<int> results(rows.size(), 0);
    ReplicateConfig config{replicas_, 0, 0, nullptr, 0};
    api_.batch_put_from(store_, a.key_ptrs.data(), a.buffers.data(), a.sizes.data(), rows.size(), &config,
                        results.data());
    // A key stored already is READY only once the store holds it complete.
    std::vector<const char *> existing;
    for (size_t k = 0; k < rows.size(); ++k)
        if (results[k] == OBJECT_ALREADY_EXISTS) existing.push_back(a.key_ptrs[k]);
    std::vector<int> complete(existing.size(), 0);
    if (!existing.empty()) api_.batch_is_exist(store_, existing.data(), existing.size(), complete.data());
    for (size_t k = 0, e = 0; k < rows.size(); ++k) {
        const bool is_complete = results[k] == OBJECT_ALREADY_EXISTS && complete[e++] == 1;
        Answer answer = put_answer(results[k], is_complete);
        if (answer.access_unprovable) op.unprovable = true;
        set_row(op, rows[k], answer.result, results[k], std::move(answer.message));
    }
}

void MooncakeDriver::get(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    std::vector<int64_t> read(rows.size(), 0);
    api_.batch_get_into(store_, a.key_ptrs.data(), a.buffers.data(), a.sizes.data(), rows.size(), read.data());
    for (size_t k = 0; k < rows.size(); ++k) {
        Answer answer = get_answer(read[k], op.rows[rows[k]].total);
        if (answer.access_unprovable) op.unprovable = true;  // before end_access: the regions stay pinned
        set_row(op, rows[k], answer.result, static_cast<int32_t>(read[k] < 0 ? read[k] : 0),
                std::move(answer.message));
    }
}

void MooncakeDriver::probe(Op &op, const std::vector<size_t> &rows)
{
    BatchArgs a = batch_args(op, rows);
    std::vector<int> exists(rows.size(), 0);
    api_.batch_is_exist(store_, a.key_ptrs.data(), a.key_ptrs.size(), exists.data());
    for (size_t k = 0; k < rows.size(); ++k) {
        Answer answer = probe_answer(exists[k]);
        set_row(op, rows[k], answer.result, exists[k] < 0 ? exists[k] : 0, std::move(answer.message));
    }
}

void MooncakeDriver::remove(Op &op, const std::vector<size_t> &rows)
{
    for (size_t i : rows) {
        const int rc = api_.remove(store_, store_key(op.rows[i].key).c_str(), 0);
        Answer answer = remove_answer(rc);
        set_row(op, i, answer.result, rc, std::move(answer.message));
    }
}

// ---- scenario hooks -------------------------------------------------------------

kvblob_status MooncakeDriver::stage(const char *what, const std::string &key)
{
    if (!api_.fake_stage) return KVBLOB_E_UNSUPPORTED;
    return api_.fake_stage(store_, what, key.empty() ? "" : store_key(key).c_str()) == 0 ? KVBLOB_OK
                                                                                          : KVBLOB_E_INVALID;
}

kvblob_status MooncakeDriver::stage_held_get(const std::string &key)
{
    held_gets_.stage(key);
    return KVBLOB_OK;
}

kvblob_status MooncakeDriver::release_staged()
{
    const kvblob_status st = stage("release", {});
    for (Op *op : held_gets_.release()) workers_.push([this, op] { run(*op); });
    return st;
}

}  // namespace kvblob::mooncake
