// R-OPN-2: a driver never repeats the value of an option it flags secret
// (KVBLOB_OPTION_FLAG_SECRET): not in open's error, not in a row's message,
// not in a log line. The runner's own reports redact such values
// (probe.hpp); this check looks at what the driver itself says, opening it
// with a secret of the battery's own choosing, so that any text carrying it
// came from the driver.
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string_view>

#include "common.hpp"
#include "probe.hpp"
#include "secret_forms.hpp"

namespace kvblob::conformance {

namespace {

// The names of the options the plugin's table flags secret (ABI 1.1).
std::vector<std::string> flagged_secret(const Plugin &plugin)
{
    const auto &t = plugin.table();
    std::vector<std::string> out;
    if (plugin.abi_version() < KVBLOB_ABI_1_1 || t.struct_size < sizeof(kvblob_plugin_t) || !t.option_flags)
        return out;
    for (uint64_t i = 0; i < t.option_count; ++i)
        if ((t.option_flags[i] & KVBLOB_OPTION_FLAG_SECRET) && t.options[i].name) out.push_back(t.options[i].name);
    return out;
}

// And, for a driver made of drivers (the tiered driver: tier.N.driver among
// the run's options), each option a tier's driver flags secret, as
// tier.N.<option>: a tier's secret is the composed driver's to keep too
// (R-OPN-2), and the host counts it one (Plugin::secret_option among the
// options). A tier's driver is found as the tiered driver finds it.
std::vector<std::string> flagged_secret_of_tiers(const Plugin &plugin, const Options &options)
{
    std::vector<std::string> out;
    constexpr std::string_view driver = "driver";
    for (const auto &[key, value] : options) {
        if (key.rfind("tier.", 0) != 0 || key.size() <= 5 + driver.size() + 1 ||
            key.compare(key.size() - driver.size(), driver.size(), driver) != 0)
            continue;
        const std::string tier = key.substr(0, key.size() - driver.size());  // "tier.N."
        if (tier.find_first_not_of("0123456789", 5) != tier.size() - 1 || tier.size() == 6) continue;
        try {
            LoadOptions load;
            load.search_dirs.push_back(plugin.path().parent_path());
            load.count_metrics = false;
            for (const auto &name : flagged_secret(Plugin::load(value, load)))
                if (plugin.secret_option(tier + name, options)) out.push_back(tier + name);
        } catch (const LoadError &) {
            // A tier that cannot load refuses every open of the run: other
            // checks say so.
        }
    }
    return out;
}

// Every text the driver said during a check, from any thread.
class Heard {
public:
    static constexpr const char *log_line = "a log line";
    void add(const std::string &where, const std::string &text)
    {
        std::lock_guard lock(mu_);
        texts_.push_back({where, text});
    }
    LogSink sink(std::shared_ptr<Heard> self)
    {
        return [self](kvblob_log_level, const std::string &line) { self->add(log_line, line); };
    }
    // Fails R-OPN-2 when any text carries secret, in any form
    // secret_form_in knows, naming where it was and in which form; the log
    // lines are read joined as well, so a secret split over consecutive
    // lines is found. also_secret: the other options flagged secret that
    // the run gives values of its own, in the same opens.
    void judge(const std::string &option, const std::string &secret, const std::vector<std::string> &also_secret) const
    {
        std::lock_guard lock(mu_);
        // A text is shown only where the secret in it is as given, and taken
        // out: a run's own secret (a store's real password) must not reach
        // the report in another form either.
        const auto repeats = [&](const std::string &where, const std::string &text, const std::string &form,
                                 bool show = true) {
            expect(form.empty(), "R-OPN-2",
                   where + " repeats the value given to option '" + option + "', which the driver flags secret, " +
                       form +
                       (show && form == "as given" ? ": \"" + without_secrets(text, {secret}) + "\"" : std::string()));
        };
        // The host takes a secret out of the driver's open refusal and log
        // lines before anyone sees them (kvblob::without_secrets), leaving its
        // marker: that marker is the driver's repetition, seen through the
        // host, of one of the secrets the open was given, and which one the
        // marker does not say.
        std::string others;
        for (const auto &other : also_secret)
            if (other != option) others += " or '" + other + "'";
        const auto marked = [&](const std::string &where, const std::string &text) {
            if (text.find(kvblob::removed_secret) == std::string::npos) return;
            const std::string shown =
                secret_form_in(text, secret).empty() ? ": \"" + text + "\"" : std::string();
            expect(false, "R-OPN-2",
                   others.empty()
                       ? where + " repeats the value given to option '" + option +
                             "', which the driver flags secret, as given (the host removed it)" + shown
                       : where + " repeats the value given to an option the driver flags secret, '" + option + "'" +
                             others + " (the host removed it, so which one is not known)" + shown);
        };
        std::string log;
        for (const auto &[where, text] : texts_) {
            marked(where, text);
            repeats(where, text, secret_form_in(text, secret));
            if (where == log_line) log += text;
        }
        repeats("the log, its lines read as one text,", log, secret_form_in(log, secret), false);
    }

private:
    mutable std::mutex mu_;
    std::vector<std::pair<std::string, std::string>> texts_;
};

// The messages of every row of an operation, once it settled.
void hear_rows(Context &c, Driver &d, OpKind kind, Batch &b, Heard &heard)
{
    kvblob_op_t *op = c.admit(d, kind, b);
    expect(c.settle(d, op), "R-ACC-2", std::string(to_string(kind)) + " did not settle");
    for (uint64_t i = 0; i < b.size(); ++i)
        heard.add(std::string("the message of a ") + to_string(kind) + " row", c.message(d, op, i));
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused for a settled operation");
}

// Random, and with characters a URL's userinfo must percent-encode, so that
// the percent-encoded form differs from the one given.
std::string battery_secret()
{
    std::random_device rd;
    const uint64_t n = (static_cast<uint64_t>(rd()) << 32) | rd();
    return "kvbc-secret-" + base36(n) + "@/:+";
}

void open_secret_unspoken(Context &c)
{
    auto names = flagged_secret(c.plugin());
    for (auto &name : flagged_secret_of_tiers(c.plugin(), c.options())) names.push_back(std::move(name));
    if (names.empty()) throw NotSupported("the driver flags no option secret (KVBLOB_OPTION_FLAG_SECRET)");
    // Secret options the run gives values of its own: every open below has
    // them too.
    std::vector<std::string> run_secrets;
    for (const auto &name : names)
        for (const auto &[k, v] : c.options())
            if (k == name) run_secrets.push_back(name);
    for (const auto &name : names) {
        // An option the run sets already (a store's real password) keeps its
        // value, which is then the one watched; any other gets the battery's.
        std::string secret = battery_secret();
        bool own = true;
        for (const auto &[k, v] : c.options())
            if (k == name) secret = v, own = false;
        if (secret.size() < 8) {
            c.note("option '" + name + "' is given a value too short to look for");
            continue;
        }
        auto heard = std::make_shared<Heard>();
        // A refused open: its error must not carry the secret either.
        try {
            auto refused = c.open_with({{name, secret}, {"kvbc_no_such_option", "1"}}, heard->sink(heard));
        } catch (const LoadError &e) {
            heard->add("open's error", e.what());
        }
        heard->judge(name, secret, run_secrets);
        try {
            auto d = c.open_with({{name, secret}}, heard->sink(heard));
            constexpr uint64_t size = 2048;
            GuardedBuffer src(size), dst(2 * size);
            fill_pattern(src.data(), src.size(), 71);
            auto rs = c.reg(d, src), rd = c.reg(d, dst);
            Batch put, get;
            put.row(c.key("s"), {make_span(rs, 0, size)});
            get.row(c.key("s"), {make_span(rd, 0, size / 2)})     // the wrong size: FAULT (R-ROW-5)
                .row(c.key("absent"), {make_span(rd, size, size)});  // MISS, or a failure with its message
            hear_rows(c, d, OpKind::put, put, *heard);
            hear_rows(c, d, OpKind::get, get, *heard);
            if (d.has(KVBLOB_CAP_PROBE)) {
                Batch probe;
                probe.row(c.key("s")).row(c.key("absent"));
                hear_rows(c, d, OpKind::probe, probe, *heard);
            }
        } catch (const LoadError &e) {
            // The store may refuse a credential it does not know (E_STORE):
            // the refusal is judged as the one above.
            heard->add("open's error", e.what());
            if (own) c.note("open with option '" + name + "' set by the battery was refused; its error was judged");
        }
        // The driver closed by now: what it logged while closing is heard too.
        heard->judge(name, secret, run_secrets);
    }
}

}  // namespace

// The checks of this file, in run order.
void add_secret_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"open.secret-unspoken", {"R-OPN-2"}, Level::must, 0, {},
         "opened with a secret of the battery's own choosing in each option it flags secret, the driver "
         "repeats it in no open error, row message or log line",
         open_secret_unspoken},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
