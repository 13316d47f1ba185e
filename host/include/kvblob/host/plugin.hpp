// A driver plugin loaded, negotiated and validated: the only way the host
// lets an engine reach a plugin's table.
#pragma once

#include <kvblob/kvblob.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvblob/host/driver.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/types.hpp"

namespace kvblob {

class Library;

using Options = std::vector<std::pair<std::string, std::string>>;

// Parses "key=value" words (as tools take them on the command line) into
// Options. Throws std::invalid_argument naming the first malformed word.
Options parse_option_assignments(const std::vector<std::string> &words);

// What tools and reports print in place of a secret option's value.
inline constexpr const char *redacted_value = "<redacted>";

// The name-based guess used for drivers that cannot mark secrets (ABI 1.0):
// true when the option's name contains a part such as pass, secret, token,
// cred, auth or dsn.
bool looks_secret(std::string_view option_name);

// Whether an option's value carries a password itself, whatever its name
// or its driver's marks: a URL with one in its userinfo
// (redis://user:password@host), or one given inline as password=, passwd=
// or pwd= (a DSN, a URL's query). Such values are redacted too.
bool holds_credentials(std::string_view value);

// The secrets an option's value carries in itself: each URL's userinfo
// password (as written and percent-decoded), and an inline password=.
std::vector<std::string> credentials_in(std::string_view value);

// text with every occurrence of each secret replaced by removed_secret: for
// messages a driver wrote, which may repeat what it was given (a URL in a
// connect error). Secrets shorter than min_scrubbed_secret are left, so a
// one-letter value does not blank a message out. The marker is not
// redacted_value, which a driver may well print itself: the conformance
// battery finds this one in what the host passes on, so a driver that
// repeats a secret still fails R-OPN-2 though nobody sees the secret.
//
// A text a driver wrote into a buffer it filled (an open refusal cut at
// the buffer's end) is TextEnd::maybe_cut: where it ends in the beginning
// of a secret (min_scrubbed_secret bytes or more), that is removed too, as
// the secret it was before the cut. Not for whole texts, where a message
// that ends in "token" would lose its last word to a secret "token-1234".
inline constexpr size_t min_scrubbed_secret = 4;
inline constexpr const char *removed_secret = "<secret removed by the host>";
enum class TextEnd { whole, maybe_cut };
std::string without_secrets(std::string text, const std::vector<std::string> &secrets, TextEnd end = TextEnd::whole);

class Plugin {
public:
    // Loads spec (a path, or a short name such as "memory") through the
    // stages open -> entry -> negotiate -> validate. Throws LoadError.
    // KVBLOB_LOADER_DEBUG=1 traces each stage to stderr.
    static Plugin load(const std::string &spec, const LoadOptions &options = {});

    const std::filesystem::path &path() const noexcept { return path_; }
    const kvblob_plugin_t &table() const noexcept { return *table_; }
    uint32_t abi_version() const noexcept { return abi_version_; }
    std::string name() const { return table_->name; }
    std::string version() const { return table_->version; }
    std::string description() const { return table_->description ? table_->description : ""; }
    std::vector<kvblob_option_desc_t> options() const;

    // Whether an option's value must never be printed: the driver's
    // KVBLOB_OPTION_FLAG_SECRET (ABI 1.1), or looks_secret() for a driver
    // negotiated at 1.0 or for an option the driver does not describe; an
    // option the driver does not describe whose name is a likely misspelling
    // of one it flags secret ("pasword" for "password") is secret too.
    bool secret_option(std::string_view name) const;
    // The same for an option given among options, which also knows the
    // options of a driver made of drivers (the tiered driver): a key
    // tier.N.<option> that this driver's table does not describe, given with
    // tier.N.driver=NAME, is secret when NAME's plugin marks <option>
    // secret among the tier's own options, so a tier's secret stays one
    // whatever its name. NAME is found as the tiered driver finds its tiers
    // (KVBLOB_DRIVER_PATH, then this plugin's folder). A tier driver that
    // cannot be loaded has every option of its tier secret (err towards
    // hiding).
    bool secret_option(std::string_view name, const Options &options) const;
    // options with every secret value (secret_option(key, options)) replaced
    // by redacted_value.
    Options redacted(const Options &options) const;
    // The secrets options hold: every secret option's value, and what
    // credentials_in finds in any value. The host removes them from the
    // driver's open refusal and its log lines (without_secrets).
    std::vector<std::string> secrets_in(const Options &options) const;

    // Opens a driver (stage init). Throws LoadError when open fails
    // (R-LOAD-9, R-OPN-1) or declares malformed capabilities (R-LOAD-8).
    // observe, when set, sees every announcement the driver makes.
    // metrics_label is the instance label of the driver's metrics (see
    // kvblob/host/metrics.hpp), so that two opens of one driver are told
    // apart; one that metrics_label_problem refuses throws
    // std::invalid_argument before the driver is opened.
    Driver open(const Options &options = {}, LogSink log = {}, NotifySink observe = {},
                const std::string &metrics_label = {}) const;

private:
    Plugin() = default;
    std::shared_ptr<Library> library_;
    std::filesystem::path path_;
    const kvblob_plugin_t *table_ = nullptr;
    uint32_t abi_version_ = 0;
    bool lend_notify_ = true;
    bool count_metrics_ = true;
};

}  // namespace kvblob
