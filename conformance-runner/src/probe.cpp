#include "probe.hpp"

#include "kvblob/host/version.hpp"
#include "starvation.hpp"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <sstream>

namespace kvblob::conformance {

Probe probe_of(const Plugin &plugin, const Options &options)
{
    Probe p;
    p.path = plugin.path().string();
    p.name = plugin.name();
    p.version = plugin.version();
    p.abi_version = plugin.abi_version();
    for (const auto &desc : plugin.options())
        if (desc.name && plugin.secret_option(desc.name)) p.secret_options.insert(desc.name);
    // Given options too, judged among the others: a tier's option of the
    // tiered driver is secret where the tier's driver marks it so.
    for (const auto &[name, value] : options)
        if (plugin.secret_option(name, options)) p.secret_options.insert(name);
    // One driver opened and closed here: a refusal at init is the loader's
    // too, and what it declares decides which checks can run.
    auto driver = plugin.open(options);
    p.caps = driver.caps();
    p.offer = offer_of(driver);
    return p;
}

int probe_child(const std::string &driver, const LoadOptions &load, const Options &options, const RunKey &key,
                const std::string &unconfined)
{
    std::string text;
    try {
        Probe p = probe_of(Plugin::load(driver, load), options);
        p.unconfined = unconfined;
        text = format_probe(p);
    } catch (const LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    }
    write_record(key, child_result_fd, text);
    return 0;
}

std::string format_probe(const Probe &p)
{
    // Free text (path, name, version) last on its line; names have no spaces.
    std::ostringstream out;
    out << "path " << p.path << "\nname " << p.name << "\nversion " << p.version << "\nabi " << p.abi_version
        << "\ncaps " << p.caps.flags << " " << p.caps.max_rows_per_op << " " << p.caps.max_spans_per_row << " "
        << p.caps.max_key_bytes << " " << p.caps.max_object_bytes << " " << p.caps.max_ops_in_flight << " "
        << p.caps.access_end_bound_ns << "\noffer " << p.offer.caps << "\n";
    for (const auto &h : p.offer.hooks) out << "hook " << h << "\n";
    for (const auto &s : p.secret_options) out << "secret " << s << "\n";
    if (!p.unconfined.empty()) out << "unconfined " << p.unconfined << "\n";
    return out.str();
}

Probe parse_probe(const std::string &text)
{
    Probe p;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto sp = line.find(' ');
        const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
        std::istringstream v(value);
        if (key == "path") p.path = value;
        else if (key == "name") p.name = value;
        else if (key == "version") p.version = value;
        else if (key == "abi") v >> p.abi_version;
        else if (key == "caps")
            v >> p.caps.flags >> p.caps.max_rows_per_op >> p.caps.max_spans_per_row >> p.caps.max_key_bytes >>
                p.caps.max_object_bytes >> p.caps.max_ops_in_flight >> p.caps.access_end_bound_ns;
        else if (key == "offer") v >> p.offer.caps;
        else if (key == "hook") p.offer.hooks.insert(value);
        else if (key == "secret") p.secret_options.insert(value);
        else if (key == "unconfined") p.unconfined = value;
    }
    return p;
}

namespace {
bool is_secret(const std::string &name, const std::string &value, const std::set<std::string> &secret)
{
    return secret.count(name) || looks_secret(name) || holds_credentials(value);
}
}  // namespace

Options redact(const Options &options, const std::set<std::string> &secret)
{
    Options out;
    for (const auto &[name, value] : options) out.emplace_back(name, is_secret(name, value, secret) ? "<redacted>" : value);
    return out;
}

std::vector<std::string> redact_words(const std::vector<std::string> &words, const std::set<std::string> &secret)
{
    auto hide = [&](const std::string &kv) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || !is_secret(kv.substr(0, eq), kv.substr(eq + 1), secret)) return kv;
        return kv.substr(0, eq) + "=<redacted>";
    };
    std::vector<std::string> out;
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string &w = words[i];
        if ((w == "--option" || w == "-o") && i + 1 < words.size()) {
            out.push_back(w);
            out.push_back(hide(words[++i]));
        } else if (w.rfind("--option=", 0) == 0) {
            out.push_back("--option=" + hide(w.substr(9)));
        } else {
            out.push_back(w);
        }
    }
    return out;
}

std::string base36(uint64_t v)
{
    std::string out;
    do {
        out.insert(out.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
        v /= 36;
    } while (v);
    return out;
}

CheckRun::CheckRun(const Check &c, const std::string &driver, const LoadOptions &load, const Plugin *plugin,
                   const Options &options, const std::string &prefix, size_t index, unsigned rep, unsigned timeout_s)
    : check_(c),
      driver_(driver),
      load_(load),
      plugin_(plugin),
      options_(options),
      prefix_(prefix),
      tag_(base36(index) + "." + base36(rep)),  // keys name the check by its place in the battery (short)
      timeout_s_(timeout_s)
{
}

Outcome CheckRun::body()
{
    try {
        // A check run as an older or polling host loads the plugin as that
        // host would: negotiation answers anew, and open lends what it lends.
        if (!plugin_ || !(check_.host == HostShape{})) {
            LoadOptions load = load_;
            load.newest_abi_version = check_.host.abi_version;
            load.lend_notify = check_.host.lend_notify;
            try {
                plugin_ = &loaded_.emplace(Plugin::load(driver_, load));
            } catch (const LoadError &e) {
                // A driver may speak only newer versions than the one
                // offered (it answers KVBLOB_E_UNSUPPORTED): then nothing at
                // that version can be checked.
                if (e.stage() == LoadStage::negotiate && check_.host.abi_version < KVBLOB_ABI_VERSION &&
                    std::string(e.what()).find("KVBLOB_E_UNSUPPORTED") != std::string::npos)
                    throw NotSupported("the driver speaks no ABI version up to " +
                                       abi_version_text(check_.host.abi_version) + ": " + e.what());
                throw;
            }
        }
        ctx_.emplace(*plugin_, options_, prefix_, tag_, std::chrono::seconds(timeout_s_));
        check_.body(*ctx_);
        // A scenario the check could not bring about proves nothing: not a
        // PASS, whatever else the check saw.
        if (!ctx_->unexercised().empty())
            return {Status::not_exercised, "not exercised: " + ctx_->unexercised() +
                                               (ctx_->notes().empty() ? "" : "; " + ctx_->notes())};
        return {Status::pass, ctx_->notes()};
    } catch (const LoadError &e) {
        // Refused, at load or at open, by a host that offers less than the
        // newest: the driver broke what that version and those services
        // allow (R-CAP-2); the loader's words say how.
        if (!(check_.host == HostShape{}))
            return {Status::fail, "[R-CAP-2] refused by a host of ABI " + abi_version_text(check_.host.abi_version) +
                                      (check_.host.lend_notify ? "" : " lending no notify service") + ": " + e.what()};
        return {Status::fail, std::string("unexpected error: ") + e.what()};
    } catch (const CheckFailure &f) {
        return {Status::fail, f.what()};
    } catch (const Blocked &b) {
        return {Status::blocked, b.what()};
    } catch (const Starved &s) {
        return {Status::starved, s.what()};
    } catch (const RunnerCannot &n) {
        return {Status::not_exercised, n.what()};
    } catch (const NotSupported &n) {
        return {Status::not_supported, n.what()};
    } catch (const std::exception &e) {
        return {Status::fail, std::string("unexpected error: ") + e.what()};
    }
}

Leftover CheckRun::clean_up()
{
    if (!ctx_) return {};
    // A tenth of the time (at most 2 s) stays in reserve, so that a runner
    // waiting as long never cuts the cleanup's report short.
    const auto timeout = std::chrono::seconds(timeout_s_);
    return ctx_->clean_up(std::chrono::steady_clock::now() + timeout -
                          std::min<std::chrono::nanoseconds>(timeout / 10, 2s));
}

Outcome run_check(const Check &c, const std::string &driver, const LoadOptions &load, const Plugin *plugin,
                  const Options &options, const std::string &prefix, size_t index, unsigned rep, unsigned timeout_s)
{
    CheckRun run(c, driver, load, plugin, options, prefix, index, rep, timeout_s);
    Outcome o = run.body();
    o.left = run.clean_up();
    return o;
}

}  // namespace kvblob::conformance
