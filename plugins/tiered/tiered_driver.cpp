#include "tiered_driver.hpp"

#include "one_store_check.hpp"

#include <kvblob/host/batch.hpp>
#include <kvblob/support/access_bound.hpp>
#include <kvblob/support/key_hash.hpp>
#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <numeric>

#include "tier_options.hpp"

namespace kvblob::tiered {

extern const support::OptionTable tiered_options;  // plugin.cpp

namespace {

// A tier's row message without the stack's secrets: its own host took its
// own out; the other tiers' are taken here, one the host's cut ends inside
// too.
std::string tier_words(const std::string &text, const std::vector<std::string> &secrets)
{
    const bool cut = text.size() >= kvblob::max_row_message_bytes;
    return kvblob::without_secrets(text, secrets, cut ? kvblob::TextEnd::maybe_cut : kvblob::TextEnd::whole);
}

// The folder this driver's own file is in: where its tiers' plugins are
// looked for after KVBLOB_DRIVER_PATH (the bundled drivers sit together).
std::filesystem::path own_folder()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&own_folder), &info) == 0 || !info.dli_fname) return {};
    std::error_code ec;
    auto path = std::filesystem::canonical(info.dli_fname, ec);
    return ec ? std::filesystem::path(info.dli_fname).parent_path() : path.parent_path();
}

const char *kind_name(kvblob::OpKind kind) { return kvblob::to_string(kind); }

// A row's answer where tier `label`'s put or get failed without a refusal,
// `what` its words without the stack's secrets (TierAnswer::tier_may_touch).
TierAnswer not_refused(const std::string &label, kvblob::OpKind kind, const std::string &what)
{
    return {KVBLOB_ROW_FAULT, 0, label + " failed the " + kind_name(kind) + ", not a refusal: " + what, false, true};
}

// What works for a tier's file the loader does not trust (R-LOAD-10): no
// setting allows it (plugins/tiered/README.md), so the file must be made
// trusted.
constexpr const char *untrusted_tier_advice =
    " (no setting allows a tier's untrusted file, allow_untrusted_file only the tiered driver's own: keep the "
    "tier's file owned by root or this process's user, and neither it nor its folder writable by others)";

// What a tier's refusal of the tiered open says: the tier, its driver, and
// the loader's stage and rules, without the stack's secrets (the host took
// the tier's own out; this the other tiers').
std::string refusal(const Tier &tier, const kvblob::LoadError &e, const std::vector<std::string> &secrets)
{
    std::string text = tier.label() + " refused: stage " + kvblob::to_string(e.stage());
    bool untrusted = false;
    for (const auto &p : e.problems()) {
        text += ", " + p.rule + ": " + p.reason;
        untrusted = untrusted || p.rule == "R-LOAD-10";
    }
    return kvblob::without_secrets(untrusted ? text + untrusted_tier_advice : text, secrets);
}

// ---- scenario hooks: which are offered --------------------------------------
//
// A hook is forwarded to the bottom tier, and offered, only where the bottom
// tier offers it. What each means through the stack:
//
//   stage_full_pool      forwarded as is: a put is written to the bottom tier
//                        first, and a row it DECLINED reaches no tier above.
//   stage_foreign_writer forwarded, then the key purged from the upper tiers
//   stage_failing_read   and bypassed by gets and probes until
//   stage_held_get       release_staged: otherwise an upper tier that holds
//                        the key (a put writes through, a get promotes)
//                        would answer READY first, where the hook promises
//                        NOT_READY, FAULT, or a get held inside the store.
//                        A put is the bottom tier's answer anyway; a remove
//                        reaches every tier, the bottom's answer included.
//   stage_unprovable     forwarded, purged and bypassed as above, so that the
//                        next operation naming the key reaches the bottom
//                        tier, whose unprovable access makes the tiered
//                        operation's unprovable (ask).
//   stage_corrupt        forwarded, then purged: a later get MISSes above and
//                        is FAULT from below (R-ROW-6). Corruption is
//                        permanent but needs no bypass: a later put replaces
//                        the object in every tier.
//   release_staged       forwarded; then the bypass ends.
//
// Left out:
//   advance    a tiered operation is not one operation of the bottom tier: a
//              get may be answered by the top tier and never reach the
//              bottom, a put runs one tier operation per tier, a get's
//              promotions run after it is final; the bottom tier's stages
//              are not the tiered operation's, and its operations live only
//              inside ask (no handle to translate to, before or after).
//   echo_hint  for the same reason: the bottom tier's operation for a tiered
//              one is gone by the time the battery asks (and there is none
//              for a get the top tier answered).
// The keyed hooks that purge are offered only where every upper tier
// declares KVBLOB_CAP_REMOVE.
enum Hook : unsigned {
    hook_foreign_writer = 1u << 0,
    hook_full_pool = 1u << 1,
    hook_failing_read = 1u << 2,
    hook_held_get = 1u << 3,
    hook_corrupt = 1u << 4,
    hook_unprovable = 1u << 5,
    hook_release = 1u << 6,
    hook_all = (1u << 7) - 1,
};

using Glue = support::ScenarioGlue<TieredDriver>;

constexpr kvblob_scenarios_t masked_table(unsigned mask)
{
    kvblob_scenarios_t t{};
    t.struct_size = sizeof(kvblob_scenarios_t);
    if (mask & hook_foreign_writer) t.stage_foreign_writer = &Glue::foreign_writer;
    if (mask & hook_full_pool) t.stage_full_pool = &Glue::full_pool;
    if (mask & hook_failing_read) t.stage_failing_read = &Glue::failing_read;
    if (mask & hook_held_get) t.stage_held_get = &Glue::held_get;
    if (mask & hook_corrupt) t.stage_corrupt = &Glue::corrupt;
    if (mask & hook_unprovable) t.stage_unprovable = &Glue::unprovable;
    if (mask & hook_release) t.release_staged = &Glue::release;
    return t;
}

constexpr std::array<kvblob_scenarios_t, hook_all + 1> make_tables()
{
    std::array<kvblob_scenarios_t, hook_all + 1> out{};
    for (unsigned m = 0; m <= hook_all; ++m) out[m] = masked_table(m);
    return out;
}

// Every combination, in this plugin's image (R-LOAD-12).
constexpr std::array<kvblob_scenarios_t, hook_all + 1> scenario_tables = make_tables();

// Whether s offers the slot ending at end (struct_size covers it, not NULL).
template <class Slot>
bool slot_offered(const kvblob_scenarios_t *s, size_t end, Slot slot)
{
    return s && s->struct_size >= end && slot != nullptr;
}
#define KVBT_OFFERS(s, slot) \
    slot_offered(s, offsetof(kvblob_scenarios_t, slot) + sizeof(void *), (s) ? (s)->slot : nullptr)

unsigned hooks_of(const std::vector<Tier> &tiers)
{
    const kvblob_scenarios_t *s = tiers.back().handle->scenarios();
    unsigned mask = 0;
    if (KVBT_OFFERS(s, stage_foreign_writer)) mask |= hook_foreign_writer;
    if (KVBT_OFFERS(s, stage_full_pool)) mask |= hook_full_pool;
    if (KVBT_OFFERS(s, stage_failing_read)) mask |= hook_failing_read;
    if (KVBT_OFFERS(s, stage_held_get)) mask |= hook_held_get;
    if (KVBT_OFFERS(s, stage_corrupt)) mask |= hook_corrupt;
    if (KVBT_OFFERS(s, stage_unprovable)) mask |= hook_unprovable;
    if (KVBT_OFFERS(s, release_staged)) mask |= hook_release;
    const bool upper_remove = std::all_of(tiers.begin(), tiers.end() - 1, [](const Tier &t) {
        return t.handle->has(KVBLOB_CAP_REMOVE);
    });
    if (!upper_remove)
        mask &= ~(hook_foreign_writer | hook_failing_read | hook_held_get | hook_corrupt | hook_unprovable);
    return mask;
}
#undef KVBT_OFFERS

// The tiered driver's own options, each checked against its bounds.
Settings settings_of(const support::ParsedOptions &o)
{
    Settings settings;
    settings.workers = support::worker_count(o);
    settings.write_back = o.text("write") == "back";
    settings.write_back_queue_bytes = o.bytes("write_back_queue_bytes");
    const int64_t queue_rows = o.integer("write_back_queue_rows");
    if (queue_rows < 1) throw support::OptionError("option 'write_back_queue_rows': at least 1");
    settings.write_back_queue_rows = static_cast<uint64_t>(queue_rows);
    settings.top_bytes = o.bytes("top_bytes");
    const int64_t watch_us = o.integer("submit_watch_us");
    if (watch_us < 0 || watch_us > 1000000)
        throw support::OptionError("option 'submit_watch_us': from 0 to 1000000 (one second)");
    settings.submit_watch = std::chrono::microseconds(watch_us);
    const int64_t lru_keys = o.integer("lru_keys");
    if (lru_keys < 1) throw support::OptionError("option 'lru_keys': at least 1");
    settings.lru_keys = static_cast<size_t>(lru_keys);
    if (settings.write_back && settings.write_back_queue_bytes == 0)
        throw support::OptionError("option 'write_back_queue_bytes': at least 1 byte with write=back");
    return settings;
}

}  // namespace

void LogForward::line_of_driver(kvblob_log_level level, const std::string &text)
{
    std::lock_guard lock(mu);
    if (open && host.log) host.log(host.context, level, text.c_str());
}

void LogForward::line(size_t tier, const std::string &driver, kvblob_log_level level, const std::string &text)
{
    std::lock_guard lock(mu);
    if (!open || !host.log) return;
    const std::string prefixed = "tier " + std::to_string(tier) + " (" + driver + "): " + kvblob::without_secrets(text, secrets);
    host.log(host.context, level, prefixed.c_str());
}

namespace {

// Every tier's plugin, loaded before any tier opens: which of a tier's
// options are secret is known once its plugin is, and what each tier says
// is scrubbed of every tier's secrets. secrets: the stack's, longest first.
std::vector<Tier> load_tiers(const std::vector<TierSpec> &specs, std::vector<std::string> &secrets)
{
    kvblob::LoadOptions load;
    if (auto folder = own_folder(); !folder.empty()) load.search_dirs.push_back(folder);
    // Nothing allows a tier's untrusted file (allow_untrusted_file is the
    // tiered driver's own file's): the refusal says what works instead.
    load.allow_untrusted_words.clear();
    std::vector<Tier> tiers(specs.size());
    for (size_t t = 0; t < specs.size(); ++t) {
        Tier &tier = tiers[t];
        tier.index = t;
        tier.driver = specs[t].driver;
        try {
            tier.plugin.emplace(kvblob::Plugin::load(specs[t].driver, load));
        } catch (const kvblob::LoadError &e) {
            throw support::OpenError(KVBLOB_E_STORE, "option 'tier." + std::to_string(t) + ".driver': " + refusal(tier, e, secrets));
        }
        for (auto &secret : tier.plugin->secrets_in(specs[t].options)) secrets.push_back(std::move(secret));
    }
    // Longest first, as secrets_in's: a secret that holds another goes whole.
    std::sort(secrets.begin(), secrets.end(), [](const auto &a, const auto &b) { return a.size() > b.size(); });
    return tiers;
}

// Opens each loaded tier, its log lines passed on through forward, whose
// secrets (the stack's) are set.
void open_tiers(std::vector<Tier> &tiers, const std::vector<TierSpec> &specs, const std::shared_ptr<LogForward> &forward)
{
    for (size_t t = 0; t < tiers.size(); ++t) {
        Tier &tier = tiers[t];
        kvblob::LogSink sink = [forward, t, name = specs[t].driver](kvblob_log_level level, const std::string &text) {
            forward->line(t, name, level, text);
        };
        try {
            // Labelled with its place in the stack: an engine's /metrics
            // page lists each tier as an open driver of its own
            // (metrics_of_open_drivers), told apart from the engine's.
            tier.handle.emplace(tier.plugin->open(specs[t].options, std::move(sink), {}, "tier." + std::to_string(t)));
        } catch (const kvblob::LoadError &e) {
            // A tier's option it refused is the tiered open's bad option.
            const bool bad_option = std::any_of(e.problems().begin(), e.problems().end(),
                                                [](const auto &p) { return p.rule == "R-OPN-1"; });
            const std::string why = refusal(tier, e, forward->secrets);
            if (bad_option) throw support::OptionError("option tier." + std::to_string(t) + ".*: " + why);
            throw support::OpenError(KVBLOB_E_STORE, why);
        } catch (const std::exception &e) {
            throw support::OpenError(KVBLOB_E_STORE, tier.label() + " could not be opened: " +
                                                         kvblob::without_secrets(e.what(), forward->secrets));
        }
    }
}

}  // namespace

std::unique_ptr<TieredDriver> TieredDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    SplitOptions split = split_tier_options(args);
    kvblob_open_args_t own_args = args;
    own_args.options = split.own.data();
    own_args.option_count = split.own.size();
    support::ParsedOptions o(tiered_options, own_args);
    kvblob_caps_t own{};
    own.struct_size = caps.struct_size;
    support::apply_limits(o, own);
    const Settings settings = settings_of(o);

    auto forward = std::make_shared<LogForward>();
    if (args.host && args.host->struct_size >= KVBLOB_HOST_SERVICES_SIZE_1_0) {
        forward->host.context = args.host->context;
        forward->host.log = args.host->log;
    }

    std::vector<std::string> secrets;
    std::vector<Tier> tiers = load_tiers(split.tiers, secrets);
    {
        std::lock_guard lock(forward->mu);
        forward->secrets = std::move(secrets);
    }
    open_tiers(tiers, split.tiers, forward);

    if (const std::string one = tiers_of_one_store(tiers, [&](const std::string &line) {
            forward->line_of_driver(KVBLOB_LOG_DEBUG, line);
        });
        !one.empty())
        throw support::OptionError(one);

    // What every tier honours, within the tiered driver's own limits.
    uint64_t flags = KVBLOB_CAP_HINTS | KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_DEVICE_MEMORY | KVBLOB_CAP_MULTI_SPAN |
                     KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE;
    if (!(own.flags & KVBLOB_CAP_MULTI_SPAN)) flags &= ~KVBLOB_CAP_MULTI_SPAN;
    uint64_t rows = own.max_rows_per_op, spans = own.max_spans_per_row, key = own.max_key_bytes,
             object = own.max_object_bytes, in_flight = own.max_ops_in_flight;
    for (const auto &tier : tiers) {
        const kvblob_caps_t &c = tier.handle->caps();
        flags &= c.flags;
        rows = std::min(rows, c.max_rows_per_op);
        spans = std::min(spans, c.max_spans_per_row);
        key = std::min(key, c.max_key_bytes);
        object = std::min(object, c.max_object_bytes);
        in_flight = std::min(in_flight, c.max_ops_in_flight);
    }
    // The write=back queue holds a row whole (the writer reads it back
    // from the top tier into the driver's memory): no row larger than it.
    if (settings.write_back) object = std::min(object, settings.write_back_queue_bytes);
    if (!(flags & KVBLOB_CAP_MULTI_SPAN) || spans <= 1) {
        flags &= ~KVBLOB_CAP_MULTI_SPAN;
        spans = 1;
    }
    caps.flags = flags;
    caps.max_rows_per_op = rows;
    caps.max_spans_per_row = spans;
    caps.max_key_bytes = key;
    caps.max_object_bytes = object;
    caps.max_ops_in_flight = in_flight;
    // Every tier operation under a tiered one has ended its access before
    // the tiered one is final (ask waits for it; a get's promotions read
    // the driver's own copy).
    support::declare_access_bound(args, caps, std::chrono::nanoseconds(0));
    return std::unique_ptr<TieredDriver>(
        new TieredDriver(caps, args.host, std::move(tiers), std::move(forward), settings));
}

TieredDriver::TieredDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, std::vector<Tier> tiers,
                           std::shared_ptr<LogForward> forward, const Settings &settings)
    : DriverBase(caps, host), tiers_(std::move(tiers)), forward_(std::move(forward)), settings_(settings),
      recency_(settings.lru_keys, settings.top_bytes)
{
    hooks_offered_ = hooks_of(tiers_);
    if (settings_.write_back)
        write_back_ = std::make_unique<WriteBack>(settings_.write_back_queue_bytes, settings_.write_back_queue_rows,
                                                  [this](Block &block) { return write_below(block); });
    workers_.start(settings_.workers, support::WorkQueue::watch_before_sleep, "kvblob-tiered");
    if (settings_.write_back)
        back_put_ends_.start(settings_.workers, support::WorkQueue::watch_before_sleep, "kvblob-tiered");
}

TieredDriver::~TieredDriver()
{
    stop();
    write_back_.reset();
    {
        std::lock_guard lock(regions_mu_);
        tier_regions_.clear();  // none left: close comes after every unregister
    }
    // Bottom first is not needed: each tier shuts down on its own. Their
    // last log lines still reach this driver's host, then no more.
    tiers_.clear();
    std::lock_guard lock(forward_->mu);
    forward_->open = false;
}

// Close: the workers finish what they hold, then the write-back queue
// writes every row it holds below, and says how many the bottom tier did
// not store (each was logged as it failed).
void TieredDriver::stop()
{
    back_put_ends_.stop();  // first: an end may hand rows the top tier DECLINED to the workers
    workers_.stop();
    if (!write_back_ || write_back_finished_) return;
    write_back_->finish();
    write_back_finished_ = true;
    const uint64_t failed = write_back_->failed();
    log(failed ? KVBLOB_LOG_WARN : KVBLOB_LOG_INFO,
        "write=back at close: " + std::to_string(write_back_->written()) + " row(s) written below, " +
            std::to_string(failed) + " row(s) not written below");
}

kvblob_status TieredDriver::drain_everything(uint64_t timeout_ns)
{
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t(1) << 62));
    const kvblob_status st = DriverBase::drain(timeout_ns);
    if (st != KVBLOB_OK) return st;
    {
        std::unique_lock lock(promotions_mu_);
        if (!promotions_cv_.wait_until(lock, deadline, [this] { return promotions_ == 0; })) return KVBLOB_E_TIMEOUT;
    }
    if (!write_back_) return st;
    return write_back_->wait_empty(deadline) ? KVBLOB_OK : KVBLOB_E_TIMEOUT;
}

// ---- regions ----------------------------------------------------------------

kvblob_status TieredDriver::store_register(support::Region &region, std::string &why)
{
    const kvblob_region_desc_t desc{sizeof(kvblob_region_desc_t), region.kind, region.base, region.size,
                                    region.device_ordinal, 0};
    std::vector<kvblob::Region> registered;
    for (auto &tier : tiers_) {
        try {
            registered.push_back(tier.handle->register_region(desc));
        } catch (const kvblob::CallError &e) {
            // The tiers that took it let go of it as registered unwinds.
            why = tier.label() + " refused the region: " + e.what();
            return e.status();
        }
    }
    std::lock_guard lock(regions_mu_);
    tier_regions_[&region] = std::move(registered);
    return KVBLOB_OK;
}

void TieredDriver::store_unregister(support::Region &region)
{
    std::vector<kvblob::Region> gone;
    {
        std::lock_guard lock(regions_mu_);
        auto it = tier_regions_.find(&region);
        if (it == tier_regions_.end()) return;
        gone = std::move(it->second);
        tier_regions_.erase(it);
    }
    // Each is unregistered already (unregister_everywhere); an empty
    // Region does nothing as it goes.
}

kvblob_status TieredDriver::unregister_everywhere(kvblob_region_t *handle)
{
    {
        std::lock_guard lock(regions_mu_);
        auto it = tier_regions_.find(handle);
        if (it == tier_regions_.end()) return DriverBase::unregister_region(handle);  // not ours: E_INVALID
        auto &region = *static_cast<support::Region *>(handle);
        if (region.pinned.load()) return KVBLOB_E_UNPROVABLE;  // R-REG-2
        if (region.users.load() != 0) return KVBLOB_E_BUSY;     // R-REG-1
        // No tiered operation names it with access open, so none of the
        // tiers' does: each lets go. One that refuses keeps its
        // registration (and the caller the memory): BUSY, try again.
        for (size_t t = 0; t < it->second.size(); ++t) {
            kvblob::Region &r = it->second[t];
            if (!r) continue;
            const kvblob_status st = r.unregister();
            if (st == KVBLOB_E_UNPROVABLE) {
                // The tier's host keeps it for good (R-REG-2): so does this driver.
                region.pinned.store(true);
                return KVBLOB_E_UNPROVABLE;
            }
            if (st != KVBLOB_OK) {
                log(KVBLOB_LOG_WARN, tiers_[t].label() + " refused to unregister a region (" +
                                         kvblob_status_name(st) + "): the region stays registered");
                return KVBLOB_E_BUSY;
            }
        }
    }
    return DriverBase::unregister_region(handle);
}

// ---- scenario hooks ---------------------------------------------------------------

const kvblob_scenarios_t *TieredDriver::scenarios_offered() const
{
    return hooks_offered_ ? &scenario_tables[hooks_offered_] : nullptr;
}

kvblob_status TieredDriver::purge(size_t t, const std::string &key)
{
    Tier &tier = tiers_[t];
    kvblob::Batch batch;
    batch.row(key);
    try {
        kvblob::Operation op = tier.handle->submit(kvblob::OpKind::remove, batch.get());
        while (!op.wait(std::chrono::hours(1))) {
        }
        const auto r = op.results();
        if (r.at(0).result == KVBLOB_ROW_READY || r.at(0).result == KVBLOB_ROW_MISS) return KVBLOB_OK;
        log(KVBLOB_LOG_WARN, tier.label() + " kept a key staged below: " +
                                 kvblob::without_secrets(op.message(0), secrets()));
    } catch (const std::exception &e) {
        log(KVBLOB_LOG_WARN, tier.label() + " refused to remove a key staged below: " +
                                 kvblob::without_secrets(e.what(), secrets()));
    }
    return KVBLOB_E_STORE;
}

kvblob_status TieredDriver::stage_keyed(kvblob_status (*kvblob_scenarios_t::*slot)(kvblob_driver_t *, const uint8_t *,
                                                                                   uint64_t),
                                        const std::string &key, bool bypass)
{
    const kvblob::Driver &bottom = *tiers_.back().handle;
    // A write=back row of the key still queued would reach the bottom tier
    // after the stage: it goes first.
    if (write_back_) write_back_->settle({key});
    // As a remove: no promotion of the key reads before the stage and puts
    // after the purge (key_stripes.hpp).
    const KeyStripes::Exclusive held(key_stripes_, {support::key_hash(key)}, [&] {
        log(KVBLOB_LOG_DEBUG, "a staged scenario waits for a promotion of its key (or of a key that shares its lock)");
    });
    // The bottom tier first: once it is staged, no put of the key reaches
    // an upper tier (a put is written below first), so the purge that
    // follows leaves none holding it.
    const kvblob_status st =
        (bottom.scenarios()->*slot)(bottom.handle(), reinterpret_cast<const uint8_t *>(key.data()), key.size());
    if (st != KVBLOB_OK) return st;
    if (bypass) {
        std::lock_guard lock(hooks_mu_);
        bypass_.insert(key);
        keys_staged_.store(true);
    }
    for (size_t t = 0; t + 1 < tiers_.size(); ++t)
        if (const kvblob_status p = purge(t, key); p != KVBLOB_OK) return p;
    return KVBLOB_OK;
}

kvblob_status TieredDriver::stage_foreign_writer(const std::string &key)
{
    return stage_keyed(&kvblob_scenarios_t::stage_foreign_writer, key, true);
}

kvblob_status TieredDriver::stage_full_pool()
{
    const kvblob::Driver &bottom = *tiers_.back().handle;
    if (write_back_) {
        // What is queued is written before the pool fills, and puts are
        // then written through, so the bottom tier's DECLINED is theirs.
        write_back_->wait_empty(std::chrono::steady_clock::now() + std::chrono::hours(24 * 365));
        full_pool_staged_.store(true);
    }
    const kvblob_status st = bottom.scenarios()->stage_full_pool(bottom.handle());
    if (st != KVBLOB_OK) full_pool_staged_.store(false);
    return st;
}

kvblob_status TieredDriver::stage_failing_read(const std::string &key)
{
    return stage_keyed(&kvblob_scenarios_t::stage_failing_read, key, true);
}

kvblob_status TieredDriver::stage_held_get(const std::string &key)
{
    return stage_keyed(&kvblob_scenarios_t::stage_held_get, key, true);
}

kvblob_status TieredDriver::stage_corrupt(const std::string &key)
{
    return stage_keyed(&kvblob_scenarios_t::stage_corrupt, key, false);
}

kvblob_status TieredDriver::stage_unprovable(const std::string &key)
{
    return stage_keyed(&kvblob_scenarios_t::stage_unprovable, key, true);
}

kvblob_status TieredDriver::release_staged()
{
    const kvblob::Driver &bottom = *tiers_.back().handle;
    const kvblob_status st = bottom.scenarios()->release_staged(bottom.handle());
    std::lock_guard lock(hooks_mu_);
    bypass_.clear();
    keys_staged_.store(false);
    full_pool_staged_.store(false);
    return st;
}

std::vector<size_t> TieredDriver::hold_back(TieredOp &op, std::vector<size_t> &rows)
{
    std::vector<size_t> held;
    if (!keys_staged_.load()) return held;
    std::lock_guard lock(hooks_mu_);
    std::vector<size_t> keep;
    for (size_t i : rows) (bypass_.count(op.rows[i].key) ? held : keep).push_back(i);
    rows = std::move(keep);
    return held;
}

// ---- operations ---------------------------------------------------------------

void TieredDriver::start(Op &base)
{
    auto &op = static_cast<TieredOp &>(base);
    if (op.kind == support::OpKind::get && start_get(op)) return;
    if (op.kind == support::OpKind::put && start_back_put(op)) return;
    workers_.push([this, &op] { run(op); });
}

void TieredDriver::on_cancel(Op &base)
{
    auto &op = static_cast<TieredOp &>(base);
    {
        std::lock_guard lock(op.mu);
        for (const kvblob::Operation *tier_op : op.cancellable) tier_op->cancel();  // never blocks (R-CAN-1)
    }
    // A write=back put waiting for room in the queue ends its wait
    // (write_back); the queue's lock is held only for a look, never a wait.
    if (write_back_ && op.kind == support::OpKind::put) write_back_->interrupt();
}

std::optional<kvblob::Operation> TieredDriver::submit_to(TieredOp &op, size_t t, kvblob::OpKind kind,
                                                        const std::vector<size_t> &rows,
                                                        std::vector<TierAnswer> &out)
{
    Tier &tier = tiers_[t];
    out.clear();  // sized by a refusal here, or by collect
    // The tier's registration of each region the operation names.
    TierBatch::Mapping &mapped = op.tier_batch.mapping();
    {
        std::lock_guard lock(regions_mu_);
        for (const support::Region *r : op.regions) {
            auto it = tier_regions_.find(r);
            kvblob_region_t *h = it != tier_regions_.end() && t < it->second.size() ? it->second[t].handle() : nullptr;
            mapped.emplace_back(r, h);
        }
    }
    const auto refuse_all = [&](const std::string &why) {
        out.assign(rows.size(), {KVBLOB_ROW_FAULT, 0, why, true});
        return std::optional<kvblob::Operation>{};
    };
    const kvblob_batch_t *batch = op.tier_batch.build(op, rows, mapped);
    if (!batch) return refuse_all("a span's region is not registered with " + tier.label());
    // A put or get that failed without a refusal certifies nothing
    // (R-ADM-1): the tier may have written the rows' memory, or may still
    // read or write it, and its host keeps the regions for good. So does
    // this driver: op's access is unprovable, its regions stay registered
    // (R-REG-2), and each row's answer is a FAULT no other tier is asked
    // past (TierAnswer::tier_may_touch).
    const auto failed_all = [&](const std::string &what) {
        if (kind == kvblob::OpKind::put || kind == kvblob::OpKind::get) op.unprovable = true;  // rows with memory
        out.assign(rows.size(), not_refused(tier.label(), kind, kvblob::without_secrets(what, secrets())));
        return std::optional<kvblob::Operation>{};
    };
    try {
        // Rows of op, whose admission refused a repeated key (R-ADM-4): the
        // tier's host need not hash every key again to check it.
        return tier.handle->submit(kind, *batch, kvblob::Vouch::distinct_keys);
    } catch (const kvblob::CallError &e) {
        if (!e.refused()) return failed_all(e.what());
        return refuse_all(tier.label() + " refused the " + kind_name(kind) + ": " +
                          kvblob::without_secrets(e.what(), secrets()));
    } catch (const std::exception &e) {
        return failed_all(e.what());  // not the host's refusal: nothing says where it failed
    }
}

void TieredDriver::collect(TieredOp &op, size_t t, const kvblob::Operation &tier_op, std::vector<TierAnswer> &out,
                           bool miss_messages)
{
    collect(op, t, tier_op, tier_op.results(), out, miss_messages);
}

void TieredDriver::collect(TieredOp &op, size_t t, const kvblob::Operation &tier_op,
                           const std::vector<kvblob::RowStatus> &results, std::vector<TierAnswer> &out,
                           bool miss_messages)
{
    Tier &tier = tiers_[t];
    out.assign(results.size(), {});
    for (size_t k = 0; k < out.size(); ++k) {
        out[k].result = results[k].result;
        out[k].code = results[k].driver_code;
        if (results[k].result == KVBLOB_ROW_MISS && !miss_messages) continue;
        if (results[k].result != KVBLOB_ROW_READY) {
            out[k].message = tier.label() + ": " + tier_words(tier_op.message(k), secrets());
        }
    }
    // The tier keeps the caller's memory for good: so does this driver.
    if (tier_op.access() == KVBLOB_ACCESS_UNPROVABLE) op.unprovable = true;
}

std::vector<TierAnswer> TieredDriver::ask(TieredOp &op, size_t t, kvblob::OpKind kind,
                                          const std::vector<size_t> &rows, bool cancellable)
{
    std::vector<TierAnswer> out;
    std::optional<kvblob::Operation> tier_op = submit_to(op, t, kind, rows, out);
    if (!tier_op) return out;
    if (cancellable) {
        std::lock_guard lock(op.mu);
        op.cancellable.push_back(&*tier_op);
        if (op.cancel_requested.load()) tier_op->cancel();
    }
    // Final, and its access no longer open (ended, or unprovable).
    while (!tier_op->wait(std::chrono::hours(1))) {
    }
    collect(op, t, *tier_op, out);
    if (cancellable) {
        std::lock_guard lock(op.mu);
        op.cancellable.clear();
    }
    tier_op.reset();  // released (or, unprovable, kept by the host for good)
    return out;
}

void TieredDriver::run(TieredOp &op)
{
    std::vector<size_t> rows;
    for (size_t i = 0; i < op.rows.size(); ++i)
        if (begin_row(op, i)) rows.push_back(i);
    std::vector<TierAnswer> answers(op.rows.size());
    if (!rows.empty()) {
        switch (op.kind) {
        case support::OpKind::get: run_get(op, rows); return;  // it ends op itself
        case support::OpKind::put: run_put(op, rows, answers); break;
        case support::OpKind::probe: run_probe(op, rows, answers); break;
        case support::OpKind::remove: run_remove(op, rows, answers); break;
        }
    }
    end_op(op, rows, answers);
}

void TieredDriver::end_op(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers)
{
    for (size_t i : rows) set_row(op, i, answers[i].result, answers[i].code, std::move(answers[i].message));
    const bool holds_writer = op.holds_writer;
    end_access(op);
    finish(op);  // the last touch
    if (holds_writer) write_back_->release();  // its rows are written from now on
}

Block TieredDriver::plan_promoted(TieredOp &op, const std::vector<size_t> &all, const std::vector<int> &ready_tier,
                                  std::vector<int> &from)
{
    Block copy;
    for (size_t i : all) {
        if (ready_tier[i] <= 0) continue;
        const uint64_t n = op.rows[i].total;
        if (promoting_bytes_.fetch_add(n) + n > promote_buffer_bytes) {
            promoting_bytes_.fetch_sub(n);
            log(KVBLOB_LOG_DEBUG, "promotion skipped: the promotion buffer (" +
                                      std::to_string(promote_buffer_bytes) + " bytes) is full");
            continue;
        }
        copy.rows.push_back({op.rows[i].key, copy.reserved, n, op.rows[i].key_hash});
        copy.reserved += n;
        from.push_back(ready_tier[i]);
    }
    return copy;
}

void TieredDriver::read_promoted(Block &copy, std::vector<int> &from)
{
    copy.bytes = copy_buffers_.take(std::max<uint64_t>(copy.reserved, 1));
    std::vector<bool> read(copy.rows.size(), false);
    for (size_t t = 1; t < tiers_.size(); ++t) {
        std::vector<size_t> rows;
        for (size_t k = 0; k < copy.rows.size(); ++k)
            if (from[k] == static_cast<int>(t)) rows.push_back(k);
        if (rows.empty()) continue;
        const auto got = ask_own(t, kvblob::OpKind::get, copy, rows);
        for (size_t j = 0; j < rows.size(); ++j) {
            if (got[j].result == KVBLOB_ROW_READY) read[rows[j]] = true;
            else log(KVBLOB_LOG_DEBUG, "promotion skipped: read again, " + got[j].message);
        }
    }
    std::vector<Block::Row> kept;
    std::vector<int> kept_from;
    for (size_t k = 0; k < copy.rows.size(); ++k) {
        if (!read[k]) continue;
        kept.push_back(std::move(copy.rows[k]));
        kept_from.push_back(from[k]);
    }
    copy.rows = std::move(kept);
    from = std::move(kept_from);
}

// A row READY from tier t is read again from t into the driver's copy,
// then put from it into each tier above t. A tier's answer is its own
// business: DECLINED (full) or any other non-READY answer leaves the object
// out of that tier, logged at debug level.
void TieredDriver::promote(Block &copy, std::vector<int> &from)
{
    std::vector<uint64_t> hashes;
    for (const Block::Row &row : copy.rows) hashes.push_back(row.key_hash);
    const KeyStripes::Shared keys(key_stripes_, hashes);  // no remove between the read and the puts
    read_promoted(copy, from);
    for (size_t u = 0; u + 1 < tiers_.size() && !copy.bytes.empty(); ++u) {
        std::vector<size_t> rows;
        for (size_t k = 0; k < copy.rows.size(); ++k)
            if (from[k] > static_cast<int>(u)) rows.push_back(k);
        if (rows.empty()) continue;
        std::vector<TierAnswer> put;
        if (u == 0) {
            std::vector<uint64_t> sizes;
            for (size_t k : rows) sizes.push_back(copy.rows[k].length);
            put = put_top_sized(sizes, [&](const std::vector<size_t> &idx, bool) {
                std::vector<size_t> of;
                for (size_t j : idx) of.push_back(rows[j]);
                return ask_own(0, kvblob::OpKind::put, copy, of);
            });
        } else {
            put = ask_own(u, kvblob::OpKind::put, copy, rows);
        }
        std::vector<Recency::Use> promoted;
        for (size_t k = 0; k < rows.size(); ++k) {
            if (put[k].result != KVBLOB_ROW_READY)
                log(KVBLOB_LOG_DEBUG, "promotion skipped: " + put[k].message);
            else if (u == 0)
                promoted.push_back({&copy.rows[rows[k]].key, copy.rows[rows[k]].key_hash, copy.rows[rows[k]].length});
        }
        if (!promoted.empty()) drop(recency_.hold(promoted, true));
    }
    // Every tier's access to the copy ended (ask_own), or a tier kept it
    // for good and it is no longer copy's.
    if (!copy.bytes.empty()) copy_buffers_.give_back(std::move(copy.bytes));
    copy.bytes = Bytes();
    promoting_bytes_.fetch_sub(copy.reserved);
}

void TieredDriver::run_put(TieredOp &op, const std::vector<size_t> &all, std::vector<TierAnswer> &answers)
{
    if (write_back_) write_back(op, all, answers);
    else write_through(op, all, answers);
}

// Write-through, bottom first: the last tier's answer is the row's; a row
// it stored is put into each tier above, bottom up, whose DECLINED (a full
// cache, after eviction at the top) or other failure leaves the object out
// of that tier only (the object is whole below: R-ROW-8 allows no FAULT for
// it).
void TieredDriver::write_through(TieredOp &op, const std::vector<size_t> &all, std::vector<TierAnswer> &answers)
{
    const size_t last = tiers_.size() - 1;
    auto stored = ask(op, last, kvblob::OpKind::put, all, true);
    std::vector<size_t> rows;
    for (size_t k = 0; k < all.size(); ++k) {
        answers[all[k]] = std::move(stored[k]);
        if (answers[all[k]].result == KVBLOB_ROW_READY) rows.push_back(all[k]);
    }
    for (size_t t = last; t-- > 0 && !rows.empty();) {
        auto cached = t == 0 ? put_top(op, rows, false) : ask(op, t, kvblob::OpKind::put, rows, false);
        std::vector<Recency::Use> held;
        for (size_t k = 0; k < rows.size(); ++k) {
            const auto r = cached[k].result;
            const support::Row &row = op.rows[rows[k]];
            if (r == KVBLOB_ROW_READY && t == 0) held.push_back({&row.key, row.key_hash, row.total});
            if (r == KVBLOB_ROW_READY || r == KVBLOB_ROW_DECLINED) continue;
            log(KVBLOB_LOG_WARN, "a put stored below was not cached: " + cached[k].message);
        }
        if (!held.empty()) drop(recency_.hold(held, true));
    }
}

// READY from the first tier that holds the key, else the last tier's answer;
// a key staged below is asked of the bottom tier alone.
void TieredDriver::run_probe(TieredOp &op, const std::vector<size_t> &all, std::vector<TierAnswer> &answers)
{
    std::vector<size_t> rows = all;
    std::vector<size_t> below = hold_back(op, rows);  // as in run_get
    for (size_t t = 0; t < tiers_.size(); ++t) {
        if (t + 1 == tiers_.size()) rows.insert(rows.end(), below.begin(), below.end());
        if (rows.empty()) {
            if (below.empty()) break;
            continue;
        }
        auto got = ask(op, t, kvblob::OpKind::probe, rows, true);
        std::vector<size_t> next;
        for (size_t k = 0; k < rows.size(); ++k) {
            answers[rows[k]] = std::move(got[k]);
            const auto r = answers[rows[k]].result;
            if (r != KVBLOB_ROW_READY && r != KVBLOB_ROW_CANCELLED) next.push_back(rows[k]);
        }
        rows = std::move(next);
    }
}

// Every tier, top first (the caches before the store they stand for). A
// cancel reaches the top tier's remove alone: a row it CANCELLED went
// nowhere; a row removed anywhere is removed everywhere. READY when the
// last tier's remove is READY and no tier failed; the first failure
// otherwise.
void TieredDriver::run_remove(TieredOp &op, const std::vector<size_t> &all, std::vector<TierAnswer> &answers)
{
    std::vector<std::optional<TierAnswer>> failed(op.rows.size());
    std::vector<size_t> rows = all;
    if (write_back_) {
        // A queued write of a key would store it below again after the
        // remove: it is written first.
        std::vector<std::string> keys;
        for (size_t i : all) keys.push_back(op.rows[i].key);
        write_back_->settle(keys);
    }
    // No promotion of these keys reads before this remove and puts after it.
    std::vector<uint64_t> hashes;
    for (size_t i : all) hashes.push_back(op.rows[i].key_hash);
    const KeyStripes::Exclusive keys(key_stripes_, hashes, [&] {
        log(KVBLOB_LOG_DEBUG, "a remove waits for a promotion of its keys (or of keys that share their lock)");
    });
    for (size_t i : all) recency_.forget(op.rows[i].key);
    for (size_t t = 0; t < tiers_.size() && !rows.empty(); ++t) {
        auto got = ask(op, t, kvblob::OpKind::remove, rows, t == 0);
        std::vector<size_t> next;
        for (size_t k = 0; k < rows.size(); ++k) {
            const size_t i = rows[k];
            TierAnswer &a = got[k];
            if (a.result == KVBLOB_ROW_CANCELLED && t == 0) {
                answers[i] = std::move(a);
                continue;
            }
            if (a.result != KVBLOB_ROW_READY && a.result != KVBLOB_ROW_MISS && !failed[i]) failed[i] = a;
            answers[i] = std::move(a);
            next.push_back(i);
        }
        rows = std::move(next);
    }
    for (size_t i : rows)
        if (failed[i]) answers[i] = *failed[i];
}

// ---- write=back -------------------------------------------------------------

void TieredDriver::write_back(TieredOp &op, std::vector<size_t> rows, std::vector<TierAnswer> &answers)
{
    // Keys staged below (and every key while the pool is staged full) are
    // written through: the stack answers as the bottom tier does.
    std::vector<size_t> through;
    if (full_pool_staged_.load()) through.swap(rows);
    else through = hold_back(op, rows);

    // As many rows as the queue has room for at a time, waiting for room.
    if (!rows.empty() && !op.holds_writer) {
        write_back_->hold();
        op.holds_writer = true;
    }
    for (size_t next = 0; next < rows.size();) {
        std::vector<uint64_t> sizes;
        for (size_t k = next; k < rows.size(); ++k) sizes.push_back(op.rows[rows[k]].total);
        const size_t n = write_back_->reserve_some(sizes, op.cancel_requested, [&] {
            if (op.holds_writer) {  // the writer frees the room this put waits for
                write_back_->release();
                op.holds_writer = false;
            }
            log(KVBLOB_LOG_DEBUG, "write=back: a put waits for room in the queue (write_back_queue_bytes=" +
                                      std::to_string(write_back_->limit()) + ", write_back_queue_rows=" +
                                      std::to_string(write_back_->row_limit()) + ")");
        });
        if (n == 0 && op.cancel_requested.load() && sizes[0] <= write_back_->limit()) {
            // Cancelled before these rows reserved room: none reached a
            // tier, so they had no effect (R-CAN-1).
            for (size_t k = next; k < rows.size(); ++k)
                answers[rows[k]] = {KVBLOB_ROW_CANCELLED, 0, "cancelled while it waited for room in the write=back queue",
                                    false};
            break;
        }
        if (n == 0) {  // larger than the queue: not admitted (max_object_bytes)
            answers[rows[next]] = {KVBLOB_ROW_DECLINED, 0, "larger than write_back_queue_bytes", false};
            ++next;
            continue;
        }
        std::vector<size_t> admitted(rows.begin() + next, rows.begin() + next + n);
        next += n;
        back_chunk(op, admitted, answers, through);
    }
    if (!through.empty()) write_through(op, through, answers);
}

// Rows whose room in the queue is reserved: into the top tier, then, those
// it stored, queued (their keys and sizes: the writer reads their bytes back
// from the top tier, so the put's READY waits for no copy).
void TieredDriver::back_chunk(TieredOp &op, const std::vector<size_t> &admitted, std::vector<TierAnswer> &answers,
                              std::vector<size_t> &through)
{
    {
        std::vector<uint64_t> keys;
        for (size_t i : admitted) keys.push_back(op.rows[i].key_hash);
        std::shared_lock lock(evict_mu_);
        write_back_->claim(keys);
    }
    auto top = put_top(op, admitted, true);
    // A full top tier that nothing could be evicted from is a cache that is
    // skipped: its rows are written through below it.
    queue_stored(op, admitted, top, answers, through);
}

std::vector<bool> TieredDriver::write_below(Block &block)
{
    const size_t last = tiers_.size() - 1;
    std::vector<bool> stored(block.rows.size(), false);
    std::vector<size_t> all(block.rows.size()), rows;
    std::iota(all.begin(), all.end(), size_t{0});
    // The bytes, read back from the top tier: a queued key is never
    // evicted, and a remove or a scenario staged below waits until it is
    // written, so the top tier holds it (a store shared with another
    // driver that removed it fails the row, logged and counted).
    block.bytes = copy_buffers_.take(std::max<uint64_t>(block.reserved, 1));
    const auto read = ask_own(0, kvblob::OpKind::get, block, all);
    for (size_t k : all) {
        if (read[k].result == KVBLOB_ROW_READY) rows.push_back(k);
        else
            log(KVBLOB_LOG_WARN, "write=back: a row was not written below: it could not be read back (" +
                                     std::string(kvblob_row_result_name(read[k].result)) + "): " + read[k].message);
    }
    const auto answers = rows.empty() ? std::vector<TierAnswer>{} : ask_own(last, kvblob::OpKind::put, block, rows);
    std::vector<size_t> kept;
    for (size_t j = 0; j < rows.size(); ++j) {
        const size_t k = rows[j];
        if (answers[j].result == KVBLOB_ROW_READY) {
            stored[k] = true;
            recency_.written_below(block.rows[k].key);
            kept.push_back(k);
            continue;
        }
        log(KVBLOB_LOG_WARN, "write=back: a row was not written below (" +
                                 std::string(kvblob_row_result_name(answers[j].result)) + "): " + answers[j].message);
    }
    // The tiers between, bottom up, as caches: only what the bottom stored.
    for (size_t t = last; t-- > 1 && !kept.empty();) {
        auto cached = ask_own(t, kvblob::OpKind::put, block, kept);
        for (size_t k = 0; k < kept.size(); ++k) {
            const auto r = cached[k].result;
            if (r == KVBLOB_ROW_READY || r == KVBLOB_ROW_DECLINED) continue;
            log(KVBLOB_LOG_WARN, "write=back: a row stored below was not cached: " + cached[k].message);
        }
    }
    // As promote's copy: only where no tier kept it for good.
    if (!block.bytes.empty()) copy_buffers_.give_back(std::move(block.bytes));
    block.bytes = Bytes();
    return stored;
}

std::vector<TierAnswer> TieredDriver::ask_own(size_t t, kvblob::OpKind kind, Block &block,
                                              const std::vector<size_t> &rows)
{
    Tier &tier = tiers_[t];
    std::vector<TierAnswer> out(rows.size());
    const auto fail_all = [&](const std::string &why) {
        for (auto &a : out) a = {KVBLOB_ROW_FAULT, 0, why, true};
        return out;
    };
    // A tier before this one kept access to the copy for good.
    if (block.bytes.empty()) return fail_all(tier.label() + " not asked: a tier below kept the copy for good");
    kvblob::Region region;
    try {
        region = tier.handle->register_region(
            {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, block.bytes.data(), block.bytes.size(), 0, 0});
    } catch (const std::exception &e) {
        return fail_all(tier.label() + " refused the write=back copy's region: " +
                        kvblob::without_secrets(e.what(), secrets()));
    }
    kvblob::Batch batch;
    for (size_t k : rows)
        batch.row(block.rows[k].key, {kvblob::make_span(region.handle(), block.rows[k].offset, block.rows[k].length)});
    std::optional<kvblob::Operation> tier_op;
    // Not a refusal (submit_to says why): the tier may write or read the
    // copy for good, which is never freed nor used again.
    const auto failed_all = [&](const std::string &what) {
        keep_for_good(block);
        out.assign(rows.size(), not_refused(tier.label(), kind, kvblob::without_secrets(what, secrets())));
        return out;
    };
    try {
        tier_op.emplace(tier.handle->submit(kind, batch.get()));
    } catch (const kvblob::CallError &e) {
        if (!e.refused()) return failed_all(e.what());
        return fail_all(tier.label() + " refused the " + kind_name(kind) + ": " +
                        kvblob::without_secrets(e.what(), secrets()));
    } catch (const std::exception &e) {
        return failed_all(e.what());
    }
    while (!tier_op->wait(std::chrono::hours(1))) {
    }
    const auto results = tier_op->results();
    for (size_t k = 0; k < rows.size(); ++k) {
        out[k].result = results[k].result;
        out[k].code = results[k].driver_code;
        if (results[k].result != KVBLOB_ROW_READY)
            out[k].message = tier.label() + ": " + tier_words(tier_op->message(k), secrets());
    }
    if (tier_op->access() == KVBLOB_ACCESS_UNPROVABLE) keep_for_good(block);  // the tier may touch it for good
    return out;
}

void TieredDriver::keep_for_good(Block &block)
{
    std::lock_guard lock(kept_mu_);
    kept_for_good_.push_back(std::move(block.bytes));
    block.bytes.clear();
}

// ---- the top tier's capacity ----------------------------------------------------

std::vector<TierAnswer> TieredDriver::put_top(TieredOp &op, const std::vector<size_t> &rows, bool cancellable)
{
    std::vector<uint64_t> sizes;
    for (size_t i : rows) sizes.push_back(op.rows[i].total);
    return put_top_sized(sizes, [&](const std::vector<size_t> &idx, bool first) {
        std::vector<size_t> of;
        for (size_t k : idx) of.push_back(rows[k]);
        return ask(op, 0, kvblob::OpKind::put, of, first && cancellable);
    });
}

std::vector<TierAnswer> TieredDriver::put_top_sized(const std::vector<uint64_t> &sizes, const TopPut &put)
{
    const auto total = [&](const std::vector<size_t> &of) {
        uint64_t n = 0;
        for (size_t k : of) n += sizes[k];
        return n;
    };
    std::vector<size_t> rows(sizes.size());
    std::iota(rows.begin(), rows.end(), size_t{0});
    if (const uint64_t over = recency_.over_budget(total(rows))) evict(over);
    std::vector<TierAnswer> out;
    std::vector<size_t> asked = rows;
    if (recency_.has_budget() && recency_.over_budget(total(rows))) {
        // Still over (nothing more to evict): the rows that fit go, the
        // rest are the budget's DECLINED.
        asked.clear();
        std::vector<bool> fits(rows.size(), false);
        uint64_t sum = 0;
        for (size_t k : rows)
            if (!recency_.over_budget(sum + sizes[k])) {
                sum += sizes[k];
                fits[k] = true;
                asked.push_back(k);
            }
        out.assign(rows.size(), {});
        auto got = asked.empty() ? std::vector<TierAnswer>{} : put(asked, true);
        for (size_t k = 0, j = 0; k < rows.size(); ++k)
            out[k] = fits[k] ? std::move(got[j++])
                             : TierAnswer{KVBLOB_ROW_DECLINED, 0,
                                          tiers_[0].label() + ": over top_bytes=" +
                                              std::to_string(recency_.budget()) + ", nothing left to evict",
                                          false};
    } else {
        out = put(rows, true);
    }
    // Rows the tier DECLINED (full): evict what is held below, ask again.
    for (int round = 0; round < 4; ++round) {
        std::vector<size_t> again;
        for (size_t k : rows)
            if (out[k].result == KVBLOB_ROW_DECLINED && !out[k].refused &&
                std::find(asked.begin(), asked.end(), k) != asked.end())
                again.push_back(k);
        if (again.empty() || !evict(total(again))) break;
        auto retry = put(again, false);
        for (size_t j = 0; j < again.size(); ++j) out[again[j]] = std::move(retry[j]);
    }
    return out;
}

bool TieredDriver::evict(uint64_t bytes)
{
    if (!tiers_[0].handle->has(KVBLOB_CAP_REMOVE)) return false;
    return drop(recency_.take_victims(bytes)) > 0;
}

size_t TieredDriver::drop(std::vector<std::string> victims)
{
    if (victims.empty()) return 0;
    std::unique_lock lock(evict_mu_);
    if (write_back_)  // claimed again since it was written below: not a victim now
        victims.erase(std::remove_if(victims.begin(), victims.end(),
                                     [&](const std::string &k) { return write_back_->pending(k); }),
                      victims.end());
    return remove_from_top(std::move(victims));
}

size_t TieredDriver::remove_from_top(std::vector<std::string> keys)
{
    if (keys.empty() || !tiers_[0].handle->has(KVBLOB_CAP_REMOVE)) return 0;
    Tier &tier = tiers_[0];
    size_t removed = 0;
    const size_t per_op = std::max<uint64_t>(1, tier.handle->caps().max_rows_per_op);
    for (size_t first = 0; first < keys.size(); first += per_op) {
        kvblob::Batch batch;
        const size_t end = std::min(keys.size(), first + per_op);
        for (size_t k = first; k < end; ++k) batch.row(keys[k]);
        try {
            kvblob::Operation op = tier.handle->submit(kvblob::OpKind::remove, batch.get());
            while (!op.wait(std::chrono::hours(1))) {
            }
            const auto r = op.results();
            for (size_t k = 0; k < r.size(); ++k)
                if (r[k].result == KVBLOB_ROW_READY || r[k].result == KVBLOB_ROW_MISS) ++removed;
        } catch (const std::exception &e) {
            log(KVBLOB_LOG_WARN, tier.label() + " refused an eviction: " +
                                     kvblob::without_secrets(e.what(), secrets()));
        }
    }
    log(KVBLOB_LOG_DEBUG, "evicted " + std::to_string(removed) + " least recently used object(s) from " +
                              tier.label());
    return removed;
}

}  // namespace kvblob::tiered
