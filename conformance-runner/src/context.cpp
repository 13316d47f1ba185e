#include "context.hpp"

#include <cstddef>
#include <cstring>
#include <optional>
#include <thread>

#include "access_wait.hpp"
#include "check_metrics.hpp"
#include "fault_site.hpp"
#include "starvation.hpp"

#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/printable.hpp"

namespace kvblob::conformance {

Context::Context(const Plugin &plugin, Options options, std::string run_prefix, std::string key_tag,
                 std::chrono::milliseconds timeout)
    : op_timeout(timeout),
      plugin_(plugin),
      options_(std::move(options)),
      run_prefix_(std::move(run_prefix)),
      key_tag_(std::move(key_tag))
{
}

void RegionLedger::remove(kvblob_driver_t *driver, kvblob_region_t *region)
{
    std::lock_guard lock(mu_);
    std::erase_if(entries_, [&](const Entry &e) { return e.driver == driver && e.region == region; });
}

void RegionLedger::unregister_all(const kvblob_plugin_t &table, kvblob_driver_t *driver)
{
    std::vector<kvblob_region_t *> left;
    {
        std::lock_guard lock(mu_);
        std::erase_if(entries_, [&](const Entry &e) {
            if (e.driver != driver) return false;
            left.push_back(e.region);
            return true;
        });
    }
    for (auto *region : left) table.unregister_region(driver, region);  // the driver is called unlocked
}

void RegionLedger::release_staged(const kvblob_scenarios_t *scenarios, kvblob_driver_t *driver)
{
    {
        std::lock_guard lock(mu_);
        if (!staged_.erase(driver)) return;
    }
    if (scenarios && scenarios->struct_size >= offsetof(kvblob_scenarios_t, release_staged) + sizeof(void *) &&
        scenarios->release_staged)
        scenarios->release_staged(driver);  // the driver is called unlocked
}

CheckDriver Context::open() const { return CheckDriver(plugin_.open(options_), ledger_); }

CheckDriver Context::open_observed(NotifySink observe) const
{
    return CheckDriver(plugin_.open(options_, {}, std::move(observe)), ledger_);
}

CheckDriver Context::open_with(const Options &extra, LogSink log) const
{
    Options all;
    for (const auto &option : options_) {
        bool replaced = false;
        for (const auto &e : extra) replaced = replaced || e.first == option.first;
        if (!replaced) all.push_back(option);
    }
    all.insert(all.end(), extra.begin(), extra.end());
    return CheckDriver(plugin_.open(all, std::move(log)), ledger_);
}

bool Context::try_open_with(const Options &extra, std::string &why) const
{
    Options all = options_;
    all.insert(all.end(), extra.begin(), extra.end());
    try {
        auto d = plugin_.open(all);
        return true;
    } catch (const LoadError &e) {
        why = e.what();
        return false;
    }
}

std::string Context::key(const std::string &name) const { return encode_key(run_prefix_, key_tag_ + "/" + name); }

kvblob_region_t *Context::reg(Driver &d, GuardedBuffer &buf) const
{
    return register_desc(d, {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, buf.data(), buf.size(), 0, 0});
}

kvblob_region_t *Context::reg(Driver &d, void *base, uint64_t size) const
{
    return register_desc(d, {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, base, size, 0, 0});
}

kvblob_region_t *Context::reg_device(Driver &d, void *base, uint64_t size) const
{
    return register_desc(d, {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_DEVICE, base, size, 0, 0});
}

kvblob_status Context::try_register(Driver &d, const kvblob_region_desc_t &desc, kvblob_region_t **out,
                                    std::string *why) const
{
    *out = nullptr;
    char err[512] = {0};
    kvblob_status st = d.table().register_region(d.handle(), &desc, out, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (why) *why = err;
    if (st == KVBLOB_OK && *out) {
        ledger_.add(d.handle(), *out);
        note_region(*out, desc.base);
    }
    return st;
}

kvblob_region_t *Context::register_desc(Driver &d, const kvblob_region_desc_t &desc) const
{
    kvblob_region_t *region = nullptr;
    char err[512] = {0};
    kvblob_status st = d.table().register_region(d.handle(), &desc, &region, err, sizeof err);
    err[sizeof err - 1] = '\0';
    expect(st == KVBLOB_OK && region, "R-ADM-10",
           std::string("registering a live ") + (desc.kind == KVBLOB_MEMORY_DEVICE ? "DEVICE" : "HOST") +
               " region was refused: " + kvblob_status_name(st) + " " + err);
    ledger_.add(d.handle(), region);
    note_region(region, desc.base);
    return region;
}

kvblob_status Context::unreg(Driver &d, kvblob_region_t *region) const
{
    const kvblob_status st = d.table().unregister_region(d.handle(), region);
    if (st == KVBLOB_OK) ledger_.remove(d.handle(), region);
    return st;
}

void Context::unregistered(Driver &d, kvblob_region_t *region) const
{
    ledger_.remove(d.handle(), region);
}

kvblob_op_t *Context::submit(Driver &d, OpKind kind, Batch &batch, kvblob_status *status, std::string *why) const
{
    const auto &t = d.table();
    decltype(t.put) slot = kind == OpKind::put ? t.put : kind == OpKind::get ? t.get
                          : kind == OpKind::probe ? t.probe : t.remove;
    if (!slot) throw NotSupported(std::string(to_string(kind)) + " is not offered by this driver");
    char err[512] = {0};
    kvblob_op_t *op = nullptr;
    const kvblob_batch_t &raw = batch.get();
    note_spans(kind, raw);  // a guarded fault is then named by its row (fault_site.hpp)
    kvblob_status st = slot(d.handle(), &raw, &op, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (status) *status = st;
    if (why) *why = err;
    count_submit(op, kind, st);
    if (st == KVBLOB_OK && kind == OpKind::put) writes_.put(raw);
    if (st != KVBLOB_OK) {
        expect(op == nullptr, "R-ADM-9", "a refused call handed back an operation handle");
        return nullptr;
    }
    expect(op != nullptr, "R-ADM-1", "an admitted call handed back no operation handle");
    return op;
}

namespace {

// Why batch is beyond a limit d declared; empty when it is within all of them.
std::string beyond_declared_limits(const Driver &d, const kvblob_batch_t &b)
{
    const auto &caps = d.caps();
    if (b.row_count > caps.max_rows_per_op)
        return std::to_string(b.row_count) + " rows (max_rows_per_op is " + std::to_string(caps.max_rows_per_op) + ")";
    for (uint64_t i = 0; i < b.row_count; ++i) {
        const auto &row = b.rows[i];
        if (row.key_len > caps.max_key_bytes)
            return "keys of " + std::to_string(row.key_len) + " bytes (max_key_bytes is " +
                   std::to_string(caps.max_key_bytes) + ")";
        if (row.span_count > caps.max_spans_per_row)
            return std::to_string(row.span_count) + " spans in a row (max_spans_per_row is " +
                   std::to_string(caps.max_spans_per_row) + ")";
        uint64_t total = 0;
        for (uint32_t s = 0; s < row.span_count; ++s) total += row.spans[s].length;
        if (total > caps.max_object_bytes)
            return "objects of " + std::to_string(total) + " bytes (max_object_bytes is " +
                   std::to_string(caps.max_object_bytes) + ")";
    }
    return {};
}

}  // namespace

kvblob_op_t *Context::admit(Driver &d, OpKind kind, Batch &batch) const
{
    // R-ADM-10 only promises admission within the declared limits: a check
    // that needs more cannot run on this driver, and the driver is not at fault.
    if (auto beyond = beyond_declared_limits(d, batch.get()); !beyond.empty())
        throw NotSupported("this check needs " + beyond);
    kvblob_status st = KVBLOB_OK;
    std::string why;
    kvblob_op_t *op = submit(d, kind, batch, &st, &why);
    expect(op != nullptr, "R-ADM-10",
           std::string(to_string(kind)) + " within every declared limit was refused: " + kvblob_status_name(st) +
               " " + why);
    return op;
}

bool Context::settle(Driver &d, kvblob_op_t *op) const
{
    const auto deadline = std::chrono::steady_clock::now() + op_timeout;
    // Once final, a driver that declares its access-end bound gets that
    // bound and a margin (access_wait.hpp), not the check's whole timeout.
    // The time is what the battery saw (OpenWatch): a battery starved of
    // the CPU does not count its own absence against the driver.
    const bool bounded = d.has(KVBLOB_CAP_ACCESS_BOUND);
    OpenWatch open_after_final;
    auto pause = std::chrono::microseconds(1);
    // What the machine gives this process once the wait has gone on a
    // while (most waits end in microseconds, and the watch reads /proc):
    // a wait that runs out on a starved machine decides nothing.
    const auto watch_from = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(op_timeout / 10, 1s);
    std::optional<WaitWatch> watch;
    for (;;) {
        uint32_t fin = 0;
        d.table().poll(d.handle(), op, &fin);
        const auto now = std::chrono::steady_clock::now();
        if (fin) {
            if (d.table().access(d.handle(), op) != KVBLOB_ACCESS_OPEN) return true;
            open_after_final.saw_open(now);
            if (bounded && open_after_final.seen() > access_wait(d.caps()))
                throw CheckFailure("R-ACC-2", "access still open " + ms_text(open_after_final.seen()) +
                                                  " after the results were seen final (" +
                                                  ms_text(open_after_final.wall()) +
                                                  " of wall time); the driver declares " +
                                                  ms_text(std::chrono::nanoseconds(d.caps().access_end_bound_ns)) +
                                                  " (the battery waits " + ms_text(access_wait(d.caps())) + ")");
        }
        if (now > deadline) {
            if (const auto waited = watch ? std::optional(watch->figures()) : std::nullopt; waited && starved(*waited))
                throw Starved("machine starved: " + figures_text(*waited) +
                              ", too little to decide whether the operation turns final with access ended (R-ACC-2) "
                              "within " + std::to_string(op_timeout.count()) + " ms; rerun on a machine with CPU to spare");
            return false;
        }
        if (!watch && now > watch_from) watch.emplace();
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
}

std::vector<kvblob_row_status_t> Context::results(Driver &d, kvblob_op_t *op, uint64_t rows) const
{
    std::vector<kvblob_row_status_t> out(rows);
    for (auto &r : out) r = {sizeof r, -1, 0, 0};
    kvblob_status st = d.table().results(d.handle(), op, 0, rows, out.data());
    expect(st == KVBLOB_OK, "R-ROW-1", std::string("results answered ") + kvblob_status_name(st));
    count_results(op, out);
    for (uint64_t i = 0; i < rows; ++i)
        expect(out[i].result >= KVBLOB_ROW_READY && out[i].result <= KVBLOB_ROW_RESULT_LAST, "R-ROW-1",
               "row " + std::to_string(i) + " of a final operation has result " + std::to_string(out[i].result));
    return out;
}

std::vector<kvblob_row_status_t> Context::run(Driver &d, OpKind kind, Batch &batch,
                                              std::vector<std::string> *said) const
{
    kvblob_op_t *op = admit(d, kind, batch);
    expect(settle(d, op), "R-ACC-2",
           std::string(to_string(kind)) + " not final with access ended within " + std::to_string(op_timeout.count()) +
               " ms");
    auto r = results(d, op, batch.size());
    for (uint64_t i = 0; i < r.size(); ++i)
        expect(kind != OpKind::put || r[i].result != KVBLOB_ROW_MISS, "R-ROW-1",
               "row " + std::to_string(i) + ": MISS is never a put's result");
    if (said) {
        said->assign(r.size(), "");
        for (uint64_t i = 0; i < r.size(); ++i)
            if (r[i].result != KVBLOB_ROW_READY) (*said)[i] = message(d, op, i);
    }
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1",
           "release refused for a final operation whose access ended");
    return r;
}

kvblob_row_result Context::run_one(Driver &d, OpKind kind, const std::string &key,
                                   std::vector<kvblob_span_t> spans) const
{
    Batch b;
    b.row(key, std::move(spans));
    return run(d, kind, b).at(0).result;
}

void Context::require_absent_not_ready(Driver &d, const std::string &use, OpKind kind) const
{
    kvblob_row_result res;
    if (kind == OpKind::get) {
        GuardedBuffer buf(64);
        auto r = reg(d, buf);
        res = run_one(d, kind, key("never-put"), {make_span(r, 0, 64)});
        // The buffer goes on return: its registration ends first.
        expect(unreg(d, r) == KVBLOB_OK, "R-REG-1", "unregister of an idle region was refused");
    } else {
        res = run_one(d, kind, key("never-put"));
    }
    if (res != KVBLOB_ROW_READY) return;
    throw Blocked(kind == OpKind::get ? "data.miss.untouched" : "data.absent-is-miss",
                  std::string("a ") + to_string(kind) + " of a key never put answered READY, so this check cannot "
                  "read a " + to_string(kind) + " that is not READY as proof that " + use);
}

void Context::require_round_trip(Driver &d, uint64_t size, const std::string &use) const
{
    GuardedBuffer src(size), dst(size);
    fill_pattern(src.data(), size, 4242);
    std::memset(dst.data(), 0, size);
    auto rs = reg(d, src), rd = reg(d, dst);
    const std::string k = key("round-trip/" + std::to_string(size));
    Batch put, get;
    put.row(k, {make_span(rs, 0, size)});
    get.row(k, {make_span(rd, 0, size)});
    std::vector<std::string> put_said, get_said;
    const auto p = run(d, OpKind::put, put, &put_said).at(0).result;
    const auto g = run(d, OpKind::get, get, &get_said).at(0).result;
    // The buffers go on return: their registrations end first.
    expect(unreg(d, rs) == KVBLOB_OK && unreg(d, rd) == KVBLOB_OK, "R-REG-1",
           "unregister of an idle region was refused");
    const bool same = g == KVBLOB_ROW_READY && std::memcmp(src.data(), dst.data(), size) == 0;
    if (p == KVBLOB_ROW_READY && same) return;
    const std::string row = "one row of " + std::to_string(size) + " bytes";
    throw Blocked("the data.round-trip checks",
                  p != KVBLOB_ROW_READY
                      ? "a put of " + row + " answered " + kvblob_row_result_name(p) + said_text(put_said[0]) +
                            ", so this check cannot read a get that is not READY as proof that " + use
                      : "a put of " + row + " answered READY and a get of it on the same driver answered " +
                            (g == KVBLOB_ROW_READY ? std::string("READY with other bytes")
                                                   : kvblob_row_result_name(g) + said_text(get_said[0])) +
                            ", so this check cannot read a get that is not READY as proof that " + use);
}

std::string said_text(const std::string &said)
{
    return said.empty() ? " (the driver gave no message for the row)"
                        : " (the driver says of the row: '" + printable(said) + "')";
}

std::string Context::message(Driver &d, kvblob_op_t *op, uint64_t row) const
{
    char buf[512] = {0};
    d.table().row_message(d.handle(), op, row, buf, sizeof buf);
    buf[sizeof buf - 1] = '\0';
    return buf;
}

namespace {

using KeyHook = kvblob_status (*kvblob_scenarios_t::*)(kvblob_driver_t *, const uint8_t *, uint64_t);
using DriverHook = kvblob_status (*kvblob_scenarios_t::*)(kvblob_driver_t *);
using EchoHook = uint64_t (*kvblob_scenarios_t::*)(kvblob_driver_t *, kvblob_op_t *, void *, uint64_t);
using AdvanceHook = kvblob_status (*kvblob_scenarios_t::*)(kvblob_driver_t *, kvblob_op_t *, kvblob_stage);

// The hook slots the battery calls, by the names checks declare them with.
struct HookSlot {
    const char *name;
    size_t end;  // the struct_size that covers the slot (append-only tables)
    KeyHook keyed;
    DriverHook plain;
    EchoHook echo;
    AdvanceHook advance;
};
#define KVBC_END(slot) offsetof(kvblob_scenarios_t, slot) + sizeof(void *)
#define KVBC_KEYED(slot) {#slot, KVBC_END(slot), &kvblob_scenarios_t::slot, nullptr, nullptr, nullptr}
#define KVBC_PLAIN(slot) {#slot, KVBC_END(slot), nullptr, &kvblob_scenarios_t::slot, nullptr, nullptr}
const HookSlot hook_slots[] = {
    KVBC_KEYED(stage_foreign_writer), KVBC_PLAIN(stage_full_pool),  KVBC_KEYED(stage_failing_read),
    KVBC_KEYED(stage_held_get),       KVBC_KEYED(stage_corrupt),    KVBC_KEYED(stage_unprovable),
    KVBC_PLAIN(release_staged),
    {"echo_hint", KVBC_END(echo_hint), nullptr, nullptr, &kvblob_scenarios_t::echo_hint, nullptr},
    {"advance", KVBC_END(advance), nullptr, nullptr, nullptr, &kvblob_scenarios_t::advance},
};
#undef KVBC_KEYED
#undef KVBC_PLAIN
#undef KVBC_END

bool offered(const kvblob_scenarios_t *s, const HookSlot &slot)
{
    if (!s || s->struct_size < slot.end) return false;
    if (slot.keyed) return s->*slot.keyed != nullptr;
    if (slot.plain) return s->*slot.plain != nullptr;
    if (slot.echo) return s->*slot.echo != nullptr;
    return s->*slot.advance != nullptr;
}

const HookSlot &slot_named(const std::string &name)
{
    for (const auto &slot : hook_slots)
        if (name == slot.name) return slot;
    throw std::logic_error("the battery names an unknown hook: " + name);
}

const HookSlot &offered_slot(Driver &d, const std::string &hook)
{
    const HookSlot &slot = slot_named(hook);
    if (!offered(d.scenarios(), slot)) throw NotSupported("hook " + hook + " is not offered");
    return slot;
}

void expect_ok(kvblob_status st, const std::string &hook, const std::string &rule)
{
    expect(st == KVBLOB_OK, rule, hook + " answered " + kvblob_status_name(st));
}

}  // namespace

Offer offer_of(const Driver &d)
{
    Offer offer{d.caps().flags, {}};
    for (const auto &slot : hook_slots)
        if (offered(d.scenarios(), slot)) offer.hooks.insert(slot.name);
    return offer;
}

std::string missing_need(const Check &check, const Offer &offer)
{
    for (const auto &cap : capability_names(check.needs_caps & ~offer.caps))
        return "needs capability " + cap + ", which the driver does not declare";
    for (const auto &hook : check.needs_hooks)
        if (!offer.hooks.count(hook)) return "needs hook " + hook + ", which the driver does not offer";
    return {};
}

void Context::stage(Driver &d, const std::string &hook, const std::string &key, const std::string &rule) const
{
    const HookSlot &slot = offered_slot(d, hook);
    if (!slot.keyed) throw std::logic_error("hook " + hook + " takes no key");
    ledger_.staged(d.handle());
    writes_.staged(key);
    expect_ok((d.scenarios()->*slot.keyed)(d.handle(), reinterpret_cast<const uint8_t *>(key.data()), key.size()),
              hook, rule);
}

std::string Context::echo_hint(Driver &d, kvblob_op_t *op) const
{
    const HookSlot &slot = offered_slot(d, "echo_hint");
    std::string bytes(4096, '\0');
    uint64_t n = (d.scenarios()->*slot.echo)(d.handle(), op, bytes.data(), bytes.size());
    bytes.resize(std::min<uint64_t>(n, bytes.size()));
    return bytes;
}

kvblob_status Context::advance(Driver &d, kvblob_op_t *op, kvblob_stage stage) const
{
    const HookSlot &slot = offered_slot(d, "advance");
    return (d.scenarios()->*slot.advance)(d.handle(), op, stage);
}

void Context::stage(Driver &d, const std::string &hook, const std::string &rule) const
{
    const HookSlot &slot = offered_slot(d, hook);
    if (!slot.plain) throw std::logic_error("hook " + hook + " takes a key");
    if (hook != "release_staged") ledger_.staged(d.handle());
    expect_ok((d.scenarios()->*slot.plain)(d.handle()), hook, rule);
}

}  // namespace kvblob::conformance
