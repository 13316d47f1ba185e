// What a check body works with: fresh drivers opened from the plugin under
// test, keys unique to this run, and thin helpers over the driver's table.
// Checks observe the driver through the ABI alone (the host only loaded and
// validated it).
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "cleanup.hpp"
#include "guarded_buffer.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "kvblob/host/plugin.hpp"
#include "leftover.hpp"

namespace kvblob::conformance {

using namespace std::chrono_literals;

// What a driver offers, read once from a driver opened by the runner itself:
// its capability flags and the names of the scenario hooks it offers.
struct Offer {
    uint64_t caps = 0;
    std::set<std::string> hooks;
};
Offer offer_of(const Driver &d);

// Why check cannot run on a driver with this offer; empty when it can.
std::string missing_need(const Check &check, const Offer &offer);

// What a driver said of a row (its row_message), as a failure quotes it:
// " (the driver says of the row: '...')", its control characters escaped.
std::string said_text(const std::string &said);

// Regions a check registered through Context::reg and has not unregistered.
// Checks register from several threads at once (concurrency.threads).
class RegionLedger {
public:
    void add(kvblob_driver_t *driver, kvblob_region_t *region)
    {
        std::lock_guard lock(mu_);
        entries_.push_back({driver, region});
    }
    void remove(kvblob_driver_t *driver, kvblob_region_t *region);
    // Unregisters (through table) every region left on driver; answers are
    // not judged here.
    void unregister_all(const kvblob_plugin_t &table, kvblob_driver_t *driver);
    // A check staged a scenario on driver: it is released when the check's
    // driver goes, however the check ends (no check leaves one staged).
    void staged(kvblob_driver_t *driver)
    {
        std::lock_guard lock(mu_);
        staged_.insert(driver);
    }
    // Calls release_staged on driver when something was staged on it.
    void release_staged(const kvblob_scenarios_t *scenarios, kvblob_driver_t *driver);

private:
    struct Entry {
        kvblob_driver_t *driver;
        kvblob_region_t *region;
    };
    std::mutex mu_;
    std::vector<Entry> entries_;
    std::set<kvblob_driver_t *> staged_;
};

// A driver opened for one check. When it goes, what the check staged is
// released and the regions it left registered are unregistered first, so that the driver is then drained and
// closed (R-CLS-1) like any engine's: every check ends with a close, and a
// driver of a shared store undoes there what its hooks staged.
class CheckDriver : public Driver {
public:
    CheckDriver(Driver &&d, RegionLedger &ledger)
        : Driver(std::move(d)), ledger_(ledger), table_(&table()), scenarios_(scenarios()), handle_(handle())
    {
    }
    // Kept from construction: a check may move the driver out of this
    // object (to close it by hand), and then there is nothing left here.
    ~CheckDriver()
    {
        ledger_.release_staged(scenarios_, handle_);
        ledger_.unregister_all(*table_, handle_);
    }
    CheckDriver(const CheckDriver &) = delete;
    CheckDriver &operator=(const CheckDriver &) = delete;

private:
    RegionLedger &ledger_;
    const kvblob_plugin_t *table_;
    const kvblob_scenarios_t *scenarios_;
    kvblob_driver_t *handle_;
};

class Context {
public:
    Context(const Plugin &plugin, Options options, std::string run_prefix, std::string key_tag,
            std::chrono::milliseconds op_timeout);

    CheckDriver open() const;
    // Opens with observe seeing every announcement the driver makes
    // (KVBLOB_CAP_NOTIFY); observe must outlive the driver.
    CheckDriver open_observed(NotifySink observe) const;
    // The plugin as this check's host loaded it (Check::host), and the
    // options every open gets: for checks that call the table's open slot
    // themselves (checks/open_versions.cpp).
    const Plugin &plugin() const { return plugin_; }
    const Options &options() const { return options_; }
    // The options the plugin describes in its table.
    std::vector<kvblob_option_desc_t> plugin_options() const { return plugin_.options(); }
    // Opens with extra options, each in place of the check's option of the
    // same name, and log seeing every line the driver logs. Throws
    // LoadError on refusal.
    CheckDriver open_with(const Options &extra, LogSink log) const;
    // Opens with extra options; false (and the loader's words) on refusal.
    bool try_open_with(const Options &extra, std::string &why) const;
    // A key unique to this run and check: prefix/v1/hex(tag/name), where the
    // tag names the check and repetition.
    std::string key(const std::string &name) const;

    // Registers buf as HOST memory; a refusal fails the check (R-ADM-10).
    kvblob_region_t *reg(Driver &d, GuardedBuffer &buf) const;
    kvblob_region_t *reg(Driver &d, void *base, uint64_t size) const;
    // Registers size bytes of CUDA device memory on device 0 at base.
    kvblob_region_t *reg_device(Driver &d, void *base, uint64_t size) const;
    // Calls the driver's register_region slot with desc as it is; the
    // driver's answer, its message in *why. A region it gives is unregistered
    // when the check's driver goes.
    kvblob_status try_register(Driver &d, const kvblob_region_desc_t &desc, kvblob_region_t **out,
                               std::string *why = nullptr) const;
    // Unregisters a region reg() gave; the driver's answer.
    kvblob_status unreg(Driver &d, kvblob_region_t *region) const;
    // Notes that the check unregistered a region reg() gave through the
    // table itself (where the ledger's lock would stand between the
    // unregister and what the check asks next): the cleanup leaves it.
    void unregistered(Driver &d, kvblob_region_t *region) const;
    // Submits; returns the handle, or nullptr with *status and *why set.
    kvblob_op_t *submit(Driver &d, OpKind kind, Batch &batch, kvblob_status *status = nullptr,
                        std::string *why = nullptr) const;
    // Submits and requires admission (R-ADM-10).
    kvblob_op_t *admit(Driver &d, OpKind kind, Batch &batch) const;
    // Waits for final results and access no longer open: false when not so
    // within the check's timeout; fails R-ACC-2 when access outlasts the
    // bound the driver declares (access_wait.hpp).
    bool settle(Driver &d, kvblob_op_t *op) const;
    std::vector<kvblob_row_status_t> results(Driver &d, kvblob_op_t *op, uint64_t rows) const;
    // admit + settle + results + release; the results of a whole operation.
    // said, when given, receives what the driver says of each row that is
    // not READY (row_message, read before the release), "" for the others.
    std::vector<kvblob_row_status_t> run(Driver &d, OpKind kind, Batch &batch,
                                         std::vector<std::string> *said = nullptr) const;
    kvblob_row_result run_one(Driver &d, OpKind kind, const std::string &key,
                              std::vector<kvblob_span_t> spans = {}) const;
    std::string message(Driver &d, kvblob_op_t *op, uint64_t row) const;
    // Calls the scenario hook named hook (a kvblob_scenarios_t slot) on key,
    // or on the whole driver when key is omitted. Throws NotSupported when the
    // driver does not offer it; an answer other than KVBLOB_OK fails the
    // check under rule.
    void stage(Driver &d, const std::string &hook, const std::string &key, const std::string &rule) const;
    void stage(Driver &d, const std::string &hook, const std::string &rule) const;
    // Lets op pass stage in the driver's controlled mode (hook advance); the
    // driver's answer. Throws NotSupported when the hook is not offered.
    kvblob_status advance(Driver &d, kvblob_op_t *op, kvblob_stage stage) const;
    // The hint bytes the driver kept for op (hook echo_hint), at most 4 KiB.
    std::string echo_hint(Driver &d, kvblob_op_t *op) const;

    // Evidence first. A check that reads a get (or probe) that is not READY
    // as proof that nothing was stored asks here, before it judges, whether a
    // get (probe) of a key never put is not READY on d. Where it is READY,
    // that proof proves nothing: the check is Blocked by the check that
    // judges absence (data.miss.untouched for get, data.absent-is-miss for
    // probe), naming what the driver answered, instead of failing its own
    // rule. use says what the check reads the answer as ("a refused put
    // stored nothing").
    void require_absent_not_ready(Driver &d, const std::string &use, OpKind kind = OpKind::get) const;
    // The same for a round trip: a check that reads a get by another
    // driver, or one racing a put, that is not READY as evidence for its own
    // rule first asks here whether one row of size bytes put on d and got
    // back on d is READY with its bytes. Where it is not, the check is
    // Blocked by the data.round-trip checks, with the size, what the put
    // answered and what the driver said of the row.
    void require_round_trip(Driver &d, uint64_t size, const std::string &use) const;

    // A line the report prints beside the check's status, whatever it is
    // (memory kept alive on purpose, say).
    void note(const std::string &line) { notes_ += (notes_.empty() ? "" : "; ") + line; }
    const std::string &notes() const { return notes_; }
    // The check could not bring about a scenario it judges (a call held
    // inside the driver that never touched the held page): it then answers
    // NOT_EXERCISED, never PASS; a failure it found stays a failure.
    void not_exercised(const std::string &why) { unexercised_ += (unexercised_.empty() ? "" : "; ") + why; }
    const std::string &unexercised() const { return unexercised_; }

    // Notes the keys of a put the check submitted through the table itself
    // (puts through submit, admit and run are noted there): the cleanup
    // removes them.
    void wrote(const kvblob_batch_t &batch) const;
    // Once the check's drivers closed: removes what the check wrote, where
    // the driver offers remove, by deadline; says what stayed (cleanup.cpp).
    Leftover clean_up(std::chrono::steady_clock::time_point deadline) const;

    std::chrono::milliseconds op_timeout;

private:
    const Plugin &plugin_;
    Options options_;
    std::string run_prefix_;
    std::string key_tag_;
    std::string notes_;
    std::string unexercised_;
    mutable RegionLedger ledger_;
    mutable WriteLog writes_;

    kvblob_region_t *register_desc(Driver &d, const kvblob_region_desc_t &desc) const;
};

}  // namespace kvblob::conformance
