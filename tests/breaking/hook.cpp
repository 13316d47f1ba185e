// The breaking driver's C table: each slot finds the Hooked driver behind
// the handle the host holds and asks its Break, which forwards to the
// reference's slot unless its rule lives there (tests/breaking/hook.hpp).
#include "hook.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace kvblob::breaking {

namespace {

Hooked &hooked(kvblob_driver_t *d) { return *reinterpret_cast<Hooked *>(d); }
kvblob_driver_t *handle(Hooked *h) { return reinterpret_cast<kvblob_driver_t *>(h); }

std::map<std::string, std::function<std::unique_ptr<Break>()>> &registry()
{
    static std::map<std::string, std::function<std::unique_ptr<Break>()>> breaks;
    return breaks;
}

// ---- the host's callbacks, as lent to the reference ------------------------

void lent_log(void *context, kvblob_log_level level, const char *message)
{
    auto &h = *static_cast<Hooked *>(context);
    h.brk->log(h, level, message);
}

void lent_notify(void *context, kvblob_op_t *op, kvblob_notify_event event)
{
    auto &h = *static_cast<Hooked *>(context);
    {
        std::lock_guard lock(h.ops_mu);
        ++h.announcements;
        h.announced.notify_all();
        auto it = h.ops.find(op);
        if (it == h.ops.end()) {  // admitted, but its put has not returned yet
            h.early.emplace_back(op, event);
            return;
        }
        it->second.announced |= event;
    }
    h.brk->notify(h, op, event);
}

// ---- the reference's tables, one per ABI version ---------------------------

// The reference's table laid out for abi, asked of its own negotiation.
const kvblob_plugin_t *reference_table(uint32_t abi)
{
    kvblob_negotiation_t n{};
    n.struct_size = sizeof n;
    n.host_min_abi_version = n.host_max_abi_version = abi;
    return kvblob_reference_negotiate(&n) == KVBLOB_OK ? n.plugin : nullptr;
}

const kvblob_plugin_t *reference_for(uint32_t abi)
{
    static const kvblob_plugin_t *v1_0 = reference_table(KVBLOB_ABI_1_0);
    static const kvblob_plugin_t *v1_1 = reference_table(KVBLOB_ABI_1_1);
    return abi >= KVBLOB_ABI_1_1 ? v1_1 : v1_0;
}

// ---- the slots -----------------------------------------------------------------

kvblob_status open(const kvblob_open_args_t *args, kvblob_caps_t *caps, kvblob_driver_t **out, char *err,
                   uint32_t cap) noexcept
{
    if (out) *out = nullptr;
    if (!args || !caps || !out || args->struct_size < sizeof(kvblob_open_args_t))
        return reference_for(KVBLOB_ABI_1_0)->open(args, caps, out, err, cap);
    try {
        auto h = std::make_unique<Hooked>();
        h->next = reference_for(args->abi_version);
        h->abi_version = args->abi_version;
        if (args->host)
            std::memcpy(&h->host, args->host, std::min<size_t>(args->host->struct_size, sizeof h->host));
        h->lent.struct_size = args->host ? std::min<uint32_t>(args->host->struct_size, sizeof h->lent) : 0;
        h->lent.context = h.get();
        h->lent.log = &lent_log;
        h->lent.notify = h->host.notify ? &lent_notify : nullptr;
        for (uint64_t i = 0; i < args->option_count; ++i)
            if (args->options[i].key && args->options[i].value)
                h->options.emplace_back(args->options[i].key, args->options[i].value);
        h->brk = make_break();
        kvblob_status st = h->brk->open(*h, args, caps, err, cap);
        if (st != KVBLOB_OK) return st;
        *out = handle(h.release());
        return KVBLOB_OK;
    } catch (const std::exception &e) {
        if (err && cap) std::snprintf(err, cap, "%s", e.what());
        return KVBLOB_E_INTERNAL;
    }
}

kvblob_status close(kvblob_driver_t *d) noexcept
{
    if (!d) return KVBLOB_E_INVALID;
    Hooked &h = hooked(d);
    h.drop_scratch();
    kvblob_status st = h.brk->close(h);
    if (st != KVBLOB_OK) return st;
    h.close_spare();
    delete &h;
    return st;
}

const void *get_extension(kvblob_driver_t *d, const char *id) noexcept;

kvblob_status register_region(kvblob_driver_t *d, const kvblob_region_desc_t *desc, kvblob_region_t **out,
                              char *err, uint32_t cap) noexcept
{
    Hooked &h = hooked(d);
    kvblob_status st = h.brk->register_region(h, desc, out, err, cap);
    if (st == KVBLOB_OK && desc && out && *out) {
        std::lock_guard lock(h.ops_mu);
        h.regions[*out] = *desc;
    }
    return st;
}
kvblob_status unregister_region(kvblob_driver_t *d, kvblob_region_t *r) noexcept
{
    Hooked &h = hooked(d);
    kvblob_status st = h.brk->unregister_region(h, r);
    if (st == KVBLOB_OK) {
        std::lock_guard lock(h.ops_mu);
        h.regions.erase(r);
    }
    return st;
}
template <Kind K>
kvblob_status submit(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **out, char *err,
                     uint32_t cap) noexcept
{
    Hooked &h = hooked(d);
    kvblob_status st = h.brk->submit(h, K, b, out, err, cap);
    if (st != KVBLOB_OK || !out || !*out) return st;
    // Known from here on; announcements that came early are passed on now.
    std::vector<kvblob_notify_event> early;
    {
        std::lock_guard lock(h.ops_mu);
        OpInfo &info = h.ops[*out];
        info = {K, b->row_count, 0};
        for (auto it = h.early.begin(); it != h.early.end();)
            if (it->first == *out) {
                early.push_back(it->second);
                info.announced |= it->second;
                it = h.early.erase(it);
            } else {
                ++it;
            }
    }
    for (kvblob_notify_event event : early) h.brk->notify(h, *out, event);
    return st;
}
kvblob_status poll(kvblob_driver_t *d, kvblob_op_t *op, uint32_t *fin) noexcept
{
    return hooked(d).brk->poll(hooked(d), op, fin);
}
kvblob_status results(kvblob_driver_t *d, kvblob_op_t *op, uint64_t first, uint64_t count,
                      kvblob_row_status_t *out) noexcept
{
    return hooked(d).brk->results(hooked(d), op, first, count, out);
}
uint32_t row_message(kvblob_driver_t *d, kvblob_op_t *op, uint64_t row, char *buf, uint32_t cap) noexcept
{
    return hooked(d).brk->row_message(hooked(d), op, row, buf, cap);
}
kvblob_access access(kvblob_driver_t *d, kvblob_op_t *op) noexcept { return hooked(d).brk->access(hooked(d), op); }
kvblob_status cancel(kvblob_driver_t *d, kvblob_op_t *op) noexcept { return hooked(d).brk->cancel(hooked(d), op); }
kvblob_status release(kvblob_driver_t *d, kvblob_op_t *op) noexcept
{
    Hooked &h = hooked(d);
    kvblob_status st = h.brk->release(h, op);
    if (st == KVBLOB_OK) {
        std::lock_guard lock(h.ops_mu);
        h.ops.erase(op);
        h.spare_ops.erase(op);
    }
    return st;
}
kvblob_status drain(kvblob_driver_t *d, uint64_t timeout_ns) noexcept
{
    return hooked(d).brk->drain(hooked(d), timeout_ns);
}

// ---- the scenario hooks: the reference's, reached through this handle -------

Hooked &staged(kvblob_driver_t *d) { return hooked(d); }

kvblob_status foreign_writer(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
{
    return staged(d).brk->stage_foreign_writer(staged(d), k, n);
}
kvblob_status full_pool(kvblob_driver_t *d) noexcept { return staged(d).brk->stage_full_pool(staged(d)); }
kvblob_status failing_read(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
{
    return staged(d).scenarios->stage_failing_read(staged(d).inner, k, n);
}
kvblob_status held_get(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
{
    return staged(d).scenarios->stage_held_get(staged(d).inner, k, n);
}
kvblob_status corrupt(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
{
    return staged(d).scenarios->stage_corrupt(staged(d).inner, k, n);
}
kvblob_status unprovable(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
{
    return staged(d).scenarios->stage_unprovable(staged(d).inner, k, n);
}
kvblob_status release_staged(kvblob_driver_t *d) noexcept
{
    return staged(d).brk->release_staged(staged(d));
}
kvblob_status advance(kvblob_driver_t *d, kvblob_op_t *op, kvblob_stage stage) noexcept
{
    return staged(d).scenarios->advance(staged(d).inner, op, stage);
}
uint64_t echo_hint(kvblob_driver_t *d, kvblob_op_t *op, void *buf, uint64_t capacity) noexcept
{
    return staged(d).brk->echo_hint(staged(d), op, buf, capacity);
}

// This plugin's scenario table for a reference table: the slots the
// reference offers, and no other. Static storage in this image (R-LOAD-12);
// the reference answers from a handful of static tables.
const kvblob_scenarios_t *scenarios_for(const kvblob_scenarios_t *inner)
{
    static std::mutex mu;
    static std::array<std::pair<const kvblob_scenarios_t *, kvblob_scenarios_t>, 8> pool{};
    std::lock_guard lock(mu);
    for (auto &[key, table] : pool) {
        if (key == inner) return &table;
        if (key) continue;
        key = inner;
        table.struct_size = sizeof table;
        if (inner->stage_foreign_writer) table.stage_foreign_writer = &foreign_writer;
        if (inner->stage_full_pool) table.stage_full_pool = &full_pool;
        if (inner->stage_failing_read) table.stage_failing_read = &failing_read;
        if (inner->stage_held_get) table.stage_held_get = &held_get;
        if (inner->stage_corrupt) table.stage_corrupt = &corrupt;
        if (inner->stage_unprovable) table.stage_unprovable = &unprovable;
        if (inner->release_staged) table.release_staged = &release_staged;
        if (inner->advance) table.advance = &advance;
        if (inner->echo_hint) table.echo_hint = &echo_hint;
        return &table;
    }
    return nullptr;
}

const void *get_extension(kvblob_driver_t *d, const char *id) noexcept
{
    if (!d || !id) return nullptr;
    Hooked &h = hooked(d);
    const void *inner = h.next->get_extension(h.inner, id);
    if (!inner || std::strcmp(id, KVBLOB_EXT_SCENARIOS) != 0) return inner;
    h.scenarios = static_cast<const kvblob_scenarios_t *>(inner);
    return scenarios_for(h.scenarios);
}

// This plugin's table for abi: the reference's identity, options and
// layout, with every slot the reference fills pointing here.
kvblob_plugin_t hooked_table(uint32_t abi)
{
    kvblob_plugin_t t = *reference_for(abi);
    t.open = &open;
    t.close = &close;
    t.get_extension = &get_extension;
    t.register_region = &register_region;
    t.unregister_region = &unregister_region;
    t.put = &submit<Kind::put>;
    t.get = &submit<Kind::get>;
    t.probe = t.probe ? &submit<Kind::probe> : nullptr;
    t.remove = t.remove ? &submit<Kind::remove> : nullptr;
    t.poll = &poll;
    t.results = &results;
    t.row_message = &row_message;
    t.access = &access;
    t.cancel = &cancel;
    t.release = &release;
    t.drain = &drain;
    return t;
}

}  // namespace

// ---- Hooked and Break ----------------------------------------------------------

void Hooked::log(kvblob_log_level level, const std::string &message) const
{
    if (host.log) host.log(host.context, level, message.c_str());
}

void Hooked::notify(kvblob_op_t *op, kvblob_notify_event event) const
{
    if (host.notify) host.notify(host.context, op, event);
}

kvblob_status Hooked::submit(Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                             uint32_t cap) const
{
    switch (kind) {
    case Kind::put: return next->put(inner, batch, out, err, cap);
    case Kind::get: return next->get(inner, batch, out, err, cap);
    case Kind::probe: return next->probe(inner, batch, out, err, cap);
    case Kind::remove: return next->remove(inner, batch, out, err, cap);
    }
    return KVBLOB_E_INVALID;
}

Hooked::~Hooked() = default;

kvblob_driver_t *Hooked::open_spare()
{
    std::lock_guard lock(ops_mu);
    if (spare) return spare;
    std::vector<kvblob_option_t> given;
    for (const auto &[k, v] : options) given.push_back({sizeof(kvblob_option_t), 0, k.c_str(), v.c_str()});
    kvblob_open_args_t args{sizeof args, abi_version, given.data(), given.size(), &lent};
    kvblob_caps_t spare_caps{};
    spare_caps.struct_size = caps.struct_size;
    char why[256];
    if (next->open(&args, &spare_caps, &spare, why, sizeof why) != KVBLOB_OK) spare = nullptr;
    return spare;
}

kvblob_status Hooked::submit_spare(Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                                   uint32_t cap)
{
    if (!open_spare() || !batch || !batch->rows) return submit(kind, batch, out, err, cap);
    // The same rows, their spans naming the spare's registrations of the host's regions.
    std::vector<kvblob_row_t> rows(batch->rows, batch->rows + batch->row_count);
    std::vector<std::vector<kvblob_span_t>> spans(rows.size());
    {
        std::lock_guard lock(ops_mu);
        for (size_t r = 0; r < rows.size(); ++r) {
            for (uint32_t s = 0; s < rows[r].span_count && rows[r].spans; ++s) {
                kvblob_span_t span = rows[r].spans[s];
                auto known = regions.find(span.region);
                auto &theirs = spare_regions[span.region];
                if (!theirs && known != regions.end())
                    next->register_region(spare, &known->second, &theirs, nullptr, 0);
                span.region = theirs;
                spans[r].push_back(span);
            }
            rows[r].spans = spans[r].empty() ? nullptr : spans[r].data();
        }
    }
    kvblob_batch_t b = *batch;
    b.rows = rows.data();
    kvblob_op_t *op = nullptr;
    kvblob_status st = KVBLOB_E_INVALID;
    switch (kind) {
    case Kind::put: st = next->put(spare, &b, &op, err, cap); break;
    case Kind::get: st = next->get(spare, &b, &op, err, cap); break;
    case Kind::probe: st = next->probe(spare, &b, &op, err, cap); break;
    case Kind::remove: st = next->remove(spare, &b, &op, err, cap); break;
    }
    if (out) *out = op;
    if (st == KVBLOB_OK) {
        std::lock_guard lock(ops_mu);
        spare_ops.insert(op);
    }
    return st;
}

void Hooked::close_spare()
{
    if (!spare || keep_spare) return;  // a kept spare outlives this driver, on purpose
    next->drain(spare, uint64_t(10) * 1'000'000'000);
    for (const auto &[mine, theirs] : spare_regions)
        if (theirs) next->unregister_region(spare, theirs);
    next->close(spare);
    spare = nullptr;
}

kvblob_region_t *Hooked::scratch(uint64_t bytes, uint8_t **base)
{
    auto memory = std::make_unique<uint8_t[]>(bytes ? bytes : 1);  // zeroed
    kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.get(), bytes ? bytes : 1, 0, 0};
    kvblob_region_t *region = nullptr;
    if (next->register_region(inner, &desc, &region, nullptr, 0) != KVBLOB_OK) return nullptr;
    if (base) *base = memory.get();
    std::lock_guard lock(scratch_mu);
    scratches.emplace_back(std::move(memory), region);
    return region;
}

void Hooked::drop_scratch()
{
    std::lock_guard lock(scratch_mu);
    std::erase_if(scratches, [this](const auto &s) { return next->unregister_region(inner, s.second) == KVBLOB_OK; });
}

kvblob_driver_t *Hooked::of(kvblob_op_t *op)
{
    std::lock_guard lock(ops_mu);
    return spare_ops.count(op) ? spare : inner;
}

uint8_t *Hooked::address(const kvblob_span_t &span)
{
    std::lock_guard lock(ops_mu);
    auto it = regions.find(span.region);
    return it == regions.end() ? nullptr : static_cast<uint8_t *>(it->second.base) + span.offset;
}

std::vector<kvblob_row_result> Hooked::run(Kind kind, const kvblob_batch_t &batch)
{
    kvblob_op_t *op = nullptr;
    char why[256];
    if (submit(kind, &batch, &op, why, sizeof why) != KVBLOB_OK) return {};
    wait_final(op);
    std::vector<kvblob_row_status_t> rows(batch.row_count);
    for (auto &r : rows) r.struct_size = sizeof r;
    results(op, 0, rows.size(), rows.data());
    while (next->release(inner, op) == KVBLOB_E_BUSY) std::this_thread::yield();
    {
        // Its announcements were never the host's: gone with it, before the
        // address can name an operation of the host's.
        std::lock_guard lock(ops_mu);
        std::erase_if(early, [op](const auto &e) { return e.first == op; });
    }
    std::vector<kvblob_row_result> out;
    for (const auto &r : rows) out.push_back(r.result);
    return out;
}

std::vector<bool> Hooked::stored(const std::vector<std::string> &keys)
{
    std::vector<kvblob_row_t> rows;
    for (const auto &k : keys)
        rows.push_back({sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(k.data()), k.size(), nullptr});
    kvblob_batch_t batch{sizeof batch, 0, rows.data(), rows.size(), nullptr};
    std::vector<bool> out(keys.size(), false);
    if (rows.empty()) return out;
    auto results = run(Kind::probe, batch);
    for (size_t i = 0; i < results.size(); ++i) out[i] = results[i] == KVBLOB_ROW_READY;
    return out;
}

void page(const std::vector<kvblob_row_status_t> &all, uint64_t first, uint64_t count, kvblob_row_status_t *out)
{
    for (uint64_t i = 0; i < count && first + i < all.size(); ++i) out[i] = all[first + i];
}

bool Hooked::info(kvblob_op_t *op, OpInfo &out)
{
    std::lock_guard lock(ops_mu);
    auto it = ops.find(op);
    if (it == ops.end()) return false;
    out = it->second;
    return true;
}

bool Hooked::wait_final(kvblob_op_t *op)
{
    // Where the host lent notify, the reference announces each operation
    // final (lent_notify), and this waits for the next announcement after
    // each look: a mutant whose operation never ends (its check then times
    // out, 30 s in the mutation campaign) spun a core with yields for the
    // whole timeout. Without notify nothing announces, and it polls.
    uint32_t final = 0;
    for (;;) {
        uint64_t seen = 0;
        {
            std::lock_guard lock(ops_mu);
            seen = announcements;
        }
        if (poll(op, &final) != KVBLOB_OK || final) return final != 0;
        if (!lent.notify) {
            std::this_thread::yield();
            continue;
        }
        std::unique_lock lock(ops_mu);
        announced.wait(lock, [&] { return announcements != seen; });
    }
}

kvblob_status Break::open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err, uint32_t cap)
{
    kvblob_open_args_t a = *args;
    a.host = args->host ? &h.lent : nullptr;
    kvblob_status st = h.next->open(&a, caps, &h.inner, err, cap);
    if (st == KVBLOB_OK) std::memcpy(&h.caps, caps, std::min<size_t>(caps->struct_size, sizeof h.caps));
    return st;
}

Registered::Registered(const char *id, std::function<std::unique_ptr<Break>()> make)
{
    registry().emplace(id, std::move(make));
}

std::unique_ptr<Break> make_break()
{
    auto it = registry().find(kvblob_broken_check());
    return it == registry().end() ? std::make_unique<Break>() : it->second();
}

bool has_break(const std::string &id) { return registry().count(id) != 0; }

const char *option_value(const kvblob_open_args_t &args, const char *key)
{
    for (uint64_t i = 0; i < args.option_count; ++i)
        if (args.options[i].key && std::strcmp(args.options[i].key, key) == 0) return args.options[i].value;
    return nullptr;
}

}  // namespace kvblob::breaking

// The entry: the reference's negotiation, answered with this plugin's table.
extern "C" KVBLOB_EXPORT kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)
{
    using namespace kvblob::breaking;
    static const kvblob_plugin_t v1_0 = hooked_table(KVBLOB_ABI_1_0);
    static const kvblob_plugin_t v1_1 = hooked_table(KVBLOB_ABI_1_1);
    kvblob_status st = kvblob_reference_negotiate(n);
    if (st != KVBLOB_OK) return st;
    n->plugin = make_break()->table_version(n->chosen_abi_version) >= KVBLOB_ABI_1_1 ? &v1_1 : &v1_0;
    return KVBLOB_OK;
}
