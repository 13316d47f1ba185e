// The staged load: open -> entry -> negotiate -> validate, then init at open.
#include "kvblob/host/plugin.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "guarding/driver_core.hpp"
#include "driver_names.hpp"
#include "kvblob/host/discovery.hpp"
#include "kvblob/host/printable.hpp"
#include "kvblob/host/version.hpp"
#include "library.hpp"
#include "plugin_pointers.hpp"
#include "plugin_file.hpp"

namespace kvblob {

namespace {

bool loader_debug()
{
    const char *v = std::getenv("KVBLOB_LOADER_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
}

void trace(LoadStage stage, const std::string &file, const std::string &what)
{
    if (loader_debug())
        std::fprintf(stderr, "kvblob-loader: [%s] %s: %s\n", to_string(stage), file.c_str(),
                     what.c_str());
}

[[noreturn]] void refuse(const std::string &file, LoadStage stage, std::vector<LoadProblem> problems,
                         std::string dl = {})
{
    for (const auto &p : problems) trace(stage, file, "refused [" + p.rule + "] " + p.reason);
    throw LoadError(file, stage, std::move(problems), std::move(dl));
}

// Reads a plugin-owned string without trusting it to be terminated.
void check_identity(const kvblob_plugin_t &t, std::vector<LoadProblem> &problems)
{
    std::string name, version, description;
    if (auto why = read_bounded_string(t.name, 64, name); !why.empty() || name.empty())
        problems.push_back({"R-LOAD-6", "name is NULL, empty or longer than 64 bytes" + (why.empty() ? "" : ": " + why)});
    else
        for (char c : name)
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
                problems.push_back({"R-LOAD-6", "name '" + name + "' has a character outside [a-z0-9_-]"});
                break;
            }
    if (auto why = read_bounded_string(t.version, 64, version); !why.empty() || version.empty())
        problems.push_back({"R-LOAD-6", "version is NULL, empty or longer than 64 bytes" + (why.empty() ? "" : ": " + why)});
    else
        for (unsigned char c : version)
            if (c < 0x20 || c > 0x7e) {
                problems.push_back({"R-LOAD-6", "version has a non-printable byte"});
                break;
            }
    // Tools print the description: readable, if given.
    if (t.description)
        if (auto why = read_bounded_string(t.description, 4096, description); !why.empty())
            problems.push_back({"R-LOAD-6", "description is " + why});
}

void check_slots(const kvblob_plugin_t &t, std::vector<LoadProblem> &problems)
{
    struct Slot {
        const char *name;
        bool present;
    };
    const Slot mandatory[] = {
        {"open", t.open != nullptr},
        {"close", t.close != nullptr},
        {"register_region", t.register_region != nullptr},
        {"unregister_region", t.unregister_region != nullptr},
        {"put", t.put != nullptr},
        {"get", t.get != nullptr},
        {"poll", t.poll != nullptr},
        {"results", t.results != nullptr},
        {"row_message", t.row_message != nullptr},
        {"access", t.access != nullptr},
        {"cancel", t.cancel != nullptr},
        {"release", t.release != nullptr},
        {"drain", t.drain != nullptr},
    };
    for (const auto &slot : mandatory)
        if (!slot.present)
            problems.push_back({"R-LOAD-5", std::string("mandatory slot '") + slot.name + "' is NULL"});
    // Every slot given, optional ones too, must be code: the host calls it.
    const struct {
        const char *name;
        const void *fn;
    } given[] = {
        {"open", reinterpret_cast<const void *>(t.open)},
        {"close", reinterpret_cast<const void *>(t.close)},
        {"get_extension", reinterpret_cast<const void *>(t.get_extension)},
        {"register_region", reinterpret_cast<const void *>(t.register_region)},
        {"unregister_region", reinterpret_cast<const void *>(t.unregister_region)},
        {"put", reinterpret_cast<const void *>(t.put)},
        {"get", reinterpret_cast<const void *>(t.get)},
        {"probe", reinterpret_cast<const void *>(t.probe)},
        {"remove", reinterpret_cast<const void *>(t.remove)},
        {"poll", reinterpret_cast<const void *>(t.poll)},
        {"results", reinterpret_cast<const void *>(t.results)},
        {"row_message", reinterpret_cast<const void *>(t.row_message)},
        {"access", reinterpret_cast<const void *>(t.access)},
        {"cancel", reinterpret_cast<const void *>(t.cancel)},
        {"release", reinterpret_cast<const void *>(t.release)},
        {"drain", reinterpret_cast<const void *>(t.drain)},
    };
    for (const auto &slot : given)
        if (slot.fn)
            if (auto why = not_code(slot.fn); !why.empty())
                problems.push_back({"R-LOAD-5", std::string("slot '") + slot.name + "' does not point at code: " + why});
}

// The ABI 1.1 option flags, when the negotiated version and the table's
// size both cover them; NULL otherwise.
const kvblob_option_flags *option_flags(const kvblob_plugin_t &t, uint32_t abi)
{
    if (abi < KVBLOB_ABI_1_1 || t.struct_size < sizeof(kvblob_plugin_t)) return nullptr;
    return t.option_flags;
}

void check_options(const kvblob_plugin_t &t, uint32_t abi, std::vector<LoadProblem> &problems)
{
    if (t.option_count == 0) return;
    if (!t.options) {
        problems.push_back({"R-LOAD-7", "option_count is " + std::to_string(t.option_count) +
                                            " but options is NULL"});
        return;
    }
    if (t.option_count > 4096) {
        problems.push_back({"R-LOAD-7", "option_count " + std::to_string(t.option_count) + " is implausible"});
        return;
    }
    if (auto why = unreadable(t.options, t.option_count * sizeof(kvblob_option_desc_t)); !why.empty()) {
        problems.push_back({"R-LOAD-7", "the options array is not readable: " + why});
        return;
    }
    if (const auto *flags = option_flags(t, abi))
        if (auto why = unreadable(flags, t.option_count * sizeof *flags); !why.empty()) {
            problems.push_back({"R-LOAD-7", "the option_flags array is not readable: " + why});
            return;
        }
    std::set<std::string> seen;
    for (uint64_t i = 0; i < t.option_count; ++i) {
        const auto &o = t.options[i];
        std::string where = "option #" + std::to_string(i);
        std::string name;
        if (o.struct_size < sizeof(kvblob_option_desc_t))
            problems.push_back({"R-LOAD-7", where + " has struct_size " + std::to_string(o.struct_size)});
        if (auto why = read_bounded_string(o.name, 128, name); !why.empty() || name.empty()) {
            problems.push_back({"R-LOAD-7", where + " has no name" + (why.empty() ? "" : ": it is " + why)});
            continue;
        }
        // What tools print of an option: readable where given.
        std::string text;
        for (const auto &[member, value] : {std::pair{"default_value", o.default_value}, std::pair{"choices", o.choices},
                                           std::pair{"help", o.help}})
            if (value)
                if (auto why = read_bounded_string(value, 4096, text); !why.empty())
                    problems.push_back({"R-LOAD-7", "option '" + name + "' has a " + member + " that is " + why});
        if (o.type < KVBLOB_OPTION_STRING || o.type > KVBLOB_OPTION_CHOICE)
            problems.push_back({"R-LOAD-7", "option '" + name + "' has unknown type " + std::to_string(o.type)});
        if (o.type == KVBLOB_OPTION_CHOICE && !o.choices)
            problems.push_back({"R-LOAD-7", "option '" + name + "' is a choice without choices"});
        if (!seen.insert(name).second)
            problems.push_back({"R-LOAD-7", "option '" + name + "' is described twice"});
        if (const auto *flags = option_flags(t, abi); flags && (flags[i] & ~KVBLOB_OPTION_FLAG_KNOWN_MASK))
            problems.push_back({"R-LOAD-7", "option '" + name + "' sets reserved flag bits"});
    }
}

std::vector<LoadProblem> check_caps(const kvblob_plugin_t &t, uint32_t abi, const kvblob_caps_t &c,
                                    const kvblob_host_services_t &services)
{
    std::vector<LoadProblem> problems;
    // A bit defined only in a later ABI version than the negotiated one is
    // reserved for this driver.
    const uint64_t known = abi >= KVBLOB_ABI_1_1 ? KVBLOB_CAP_KNOWN_MASK : KVBLOB_CAP_KNOWN_MASK_1_0;
    if (c.flags & ~known) {
        std::ostringstream hex;
        hex << std::hex << (c.flags & ~known);
        problems.push_back({"R-LOAD-8", "reserved capability bits set for ABI " + abi_version_text(abi) + ": 0x" +
                                            hex.str()});
    }
    if ((c.flags & KVBLOB_CAP_NOTIFY) && !services.notify)
        problems.push_back({"R-LOAD-8", "declares notify but the host lent no notify service"});
    if (c.reserved != 0) problems.push_back({"R-LOAD-8", "the capability record's reserved member is not zero"});
    const struct {
        const char *name;
        uint64_t value;
    } limits[] = {{"max_rows_per_op", c.max_rows_per_op},
                  {"max_spans_per_row", c.max_spans_per_row},
                  {"max_key_bytes", c.max_key_bytes},
                  {"max_object_bytes", c.max_object_bytes},
                  {"max_ops_in_flight", c.max_ops_in_flight}};
    for (const auto &l : limits)
        if (l.value == 0)
            problems.push_back({"R-LOAD-8", std::string("limit ") + l.name +
                                                 " is 0 (use KVBLOB_NO_LIMIT for none)"});
    if (!(c.flags & KVBLOB_CAP_MULTI_SPAN) && c.max_spans_per_row > 1)
        problems.push_back({"R-LOAD-8", "max_spans_per_row is " + std::to_string(c.max_spans_per_row) +
                                             " without the multi_span capability"});
    if ((c.flags & KVBLOB_CAP_PROBE) && !t.probe)
        problems.push_back({"R-LOAD-8", "declares probe but the probe slot is NULL"});
    if ((c.flags & KVBLOB_CAP_REMOVE) && !t.remove)
        problems.push_back({"R-LOAD-8", "declares remove but the remove slot is NULL"});
    return problems;
}

// Looks up kvblob.scenarios/1. The pointer comes from the plugin: before the
// host reads through it, it must lie inside the plugin's own loaded image,
// struct_size and all (R-LOAD-12); a wild pointer would crash the engine.
std::string adopt_scenarios(DriverCore &core, const Library &library)
{
    if (!core.table->get_extension) return {};
    const void *ext = core.call(&kvblob_plugin_t::get_extension, "get_extension", static_cast<const void *>(nullptr),
                                core.handle, static_cast<const char *>(KVBLOB_EXT_SCENARIOS));
    if (!ext) return {};
    const std::string what = std::string("get_extension(\"") + KVBLOB_EXT_SCENARIOS + "\") returned ";
    if (auto why = library.outside_image(ext, sizeof(uint32_t)); !why.empty()) return what + why;
    const uint32_t size = *static_cast<const uint32_t *>(ext);
    if (auto why = library.outside_image(ext, size); !why.empty())
        return what + "a struct_size of " + std::to_string(size) + " bytes: " + why;
    if (size < sizeof(uint32_t) * 2) return {};
    // Its slots, as far as its size reaches, are called: code, or NULL.
    const auto *slots = reinterpret_cast<void *const *>(static_cast<const char *>(ext) + offsetof(kvblob_scenarios_t, stage_foreign_writer));
    const size_t count = (std::min<size_t>(size, sizeof(kvblob_scenarios_t)) - offsetof(kvblob_scenarios_t, stage_foreign_writer)) / sizeof(void *);
    static constexpr const char *names[] = {"stage_foreign_writer", "stage_full_pool", "stage_failing_read",
                                            "stage_held_get", "stage_corrupt", "stage_unprovable",
                                            "release_staged", "advance", "echo_hint"};
    static_assert(std::size(names) * sizeof(void *) ==
                  sizeof(kvblob_scenarios_t) - offsetof(kvblob_scenarios_t, stage_foreign_writer));
    for (size_t i = 0; i < count; ++i)
        if (slots[i])
            if (auto why = not_code(slots[i]); !why.empty())
                return what + "a struct whose slot " + names[i] + " does not point at code: " + why;
    core.scenarios = static_cast<const kvblob_scenarios_t *>(ext);
    return {};
}

}  // namespace

Options parse_option_assignments(const std::vector<std::string> &words)
{
    Options options;
    for (const auto &kv : words) {
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
            // Shown up to what cannot be part of a key: the rest may be a
            // secret with the wrong separator (token:VALUE).
            const size_t key_end = kv.find_first_not_of(
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
            const std::string shown =
                key_end == std::string::npos ? kv : kv.substr(0, key_end) + "... (the rest not shown)";
            throw std::invalid_argument("option '" + shown + "' is not key=value");
        }
        options.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    return options;
}

namespace {

// Stage open, when no file answers spec: where the loader looked, and what
// the caller may have meant.
[[noreturn]] void refuse_not_found(const std::string &spec, const LoadOptions &options, bool bare_file)
{
    std::string where;
    auto dirs = plugin_search_dirs(options.search_dirs);
    if (bare_file)
        for (auto &d : library_search_dirs()) dirs.push_back(std::move(d));
    for (const auto &d : dirs) where += (where.empty() ? "" : ", ") + d.string();
    const std::string name = bare_file ? spec : plugin_file_name(spec);
    refuse(name, LoadStage::open,
           {{"R-LOAD-1", (bare_file ? "no library named '" : "no driver named '") + spec + "': " + name +
                             " is not in any of [" + where + "] (set " + driver_path_env + " or give a path)" +
                             (bare_file ? std::string() : unknown_driver_advice(spec, plugin_search_dirs(options.search_dirs)))}});
}

// Stage open, a file found: judged (plugin_file.hpp), then loaded through
// the descriptor that was judged, so what is loaded is what was judged.
// The handle, and the descriptor the library keeps; the handle is null
// where the dynamic linker cannot load it.
std::pair<void *, int> load_judged(const std::string &file, const LoadOptions &options)
{
    PluginFile checked;
    try {
        checked = open_plugin_file(file, options);
    } catch (const LoadError &e) {
        for (const auto &p : e.problems()) trace(LoadStage::open, file, "refused [" + p.rule + "] " + p.reason);
        throw;
    }
    const std::string name = checked.load_name();
    trace(LoadStage::open, file, "dlopen(" + name + ", RTLD_NOW | RTLD_LOCAL): the descriptor that was checked");
    dlerror();
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return {nullptr, -1};
    if (const std::string other = other_object(handle, checked.fd.get()); !other.empty()) {
        dlclose(handle);
        refuse(file, LoadStage::open,
               {{"R-LOAD-1", "the dynamic linker answered " + name + " with another object already loaded, " + other +
                                 ", not this file"}});
    }
    return {handle, checked.fd.release()};
}

// What stage open gives the next stages.
struct Opened {
    std::shared_ptr<Library> library;
    std::string file;                          // what the loader's refusals name
    std::optional<std::filesystem::path> found;  // empty: left to the dynamic linker's search
};

// Stage open: resolve spec to one file, judge it, load what was judged.
Opened open_stage(const std::string &spec, const LoadOptions &options)
{
    // A NUL would cut the name short where it reaches the system as C text:
    // "real.so\0x" would load real.so.
    if (spec.find('\0') != std::string::npos)
        refuse(printable(spec), LoadStage::open,
               {{"R-LOAD-1", "the name or path holds a NUL character, which would cut it short: refused"}});
    Opened opened;
    opened.found = find_plugin(spec, options.search_dirs);
    const bool bare_file = spec.find('/') == std::string::npos && names_a_file(spec);
    // With neither the trust rule nor a pin to apply, a bare library name the
    // loader cannot find is left to the dynamic linker's search (its cache).
    const bool unchecked = options.allow_untrusted_file && options.expected_sha256.empty();
    if (!opened.found && !(bare_file && unchecked)) refuse_not_found(spec, options, bare_file);
    opened.file = opened.found ? opened.found->string() : spec;
    std::pair<void *, int> loaded{nullptr, -1};
    if (opened.found) {
        loaded = load_judged(opened.file, options);
    } else {
        trace(LoadStage::open, opened.file, "dlopen(RTLD_NOW | RTLD_LOCAL) through the dynamic linker's search");
        dlerror();
        loaded.first = dlopen(opened.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!loaded.first) {
        const char *why = dlerror();
        refuse(opened.file, LoadStage::open, {{"R-LOAD-1", "the dynamic linker cannot load it"}}, why ? why : "");
    }
    opened.library = std::make_shared<Library>(loaded.first, loaded.second);
    return opened;
}

// Stage entry: the one symbol a plugin exports.
kvblob_negotiate_fn entry_stage(const Library &library, const std::string &file)
{
    trace(LoadStage::entry, file, std::string("dlsym(") + KVBLOB_ENTRY_SYMBOL + ")");
    dlerror();
    auto entry = reinterpret_cast<kvblob_negotiate_fn>(library.symbol(KVBLOB_ENTRY_SYMBOL));
    if (!entry) {
        const char *why = dlerror();
        refuse(file, LoadStage::entry,
               {{"R-LOAD-2", std::string("it does not export ") + KVBLOB_ENTRY_SYMBOL + ": not a kvblob driver plugin"}},
               why ? why : "");
    }
    return entry;
}

// Stage negotiate, an answer that is not OK: which side is too old.
std::string negotiation_refused(kvblob_status st, const kvblob_negotiation_t &n, const std::string &offered)
{
    std::string reason = std::string("the entry answered ") + kvblob_status_name(st);
    if (n.chosen_abi_version > n.host_max_abi_version)
        return reason + ": the plugin speaks ABI " + abi_version_text(n.chosen_abi_version) +
               ", newer than this host's " + offered + " (update the host)";
    if (n.chosen_abi_version != 0 && n.chosen_abi_version < n.host_min_abi_version)
        return reason + ": the plugin speaks ABI " + abi_version_text(n.chosen_abi_version) + ", older than this host's " +
               offered + " (rebuild the plugin)";
    return reason + " to the offered ABI " + offered;
}

// Stage negotiate: offer our range, then re-check the answer.
kvblob_negotiation_t negotiate_stage(kvblob_negotiate_fn entry, const std::string &file, const LoadOptions &options)
{
    kvblob_negotiation_t n{};
    n.struct_size = sizeof n;
    n.host_min_abi_version = KVBLOB_ABI_VERSION_OLDEST;
    n.host_max_abi_version = std::clamp<uint32_t>(options.newest_abi_version, KVBLOB_ABI_VERSION_OLDEST, KVBLOB_ABI_VERSION);
    n.host_kvblob_version = release_version_packed();
    const std::string offered = abi_version_text(n.host_min_abi_version) + ".." + abi_version_text(n.host_max_abi_version);
    trace(LoadStage::negotiate, file, "offering ABI " + offered);
    kvblob_status st = KVBLOB_E_INTERNAL;
    try {
        st = entry(&n);
    } catch (...) {  // no exception may cross the C ABI
        refuse(file, LoadStage::negotiate, {{"R-LOAD-3", "the entry threw a C++ exception across the C ABI"}});
    }
    std::vector<LoadProblem> problems;
    const bool in_range = n.chosen_abi_version >= n.host_min_abi_version &&
                          n.chosen_abi_version <= n.host_max_abi_version;
    if (st != KVBLOB_OK) {
        problems.push_back({"R-LOAD-3", negotiation_refused(st, n, offered)});
    } else {
        if (!in_range)
            problems.push_back({"R-LOAD-3", "the plugin chose ABI " + abi_version_text(n.chosen_abi_version) +
                                                ", outside the offered " + offered});
        if (!n.plugin) problems.push_back({"R-LOAD-3", "the entry answered KVBLOB_OK with a NULL plugin table"});
        else if (auto why = unreadable(n.plugin, sizeof n.plugin->struct_size); !why.empty())
            problems.push_back({"R-LOAD-3", "the entry answered KVBLOB_OK with a plugin table that is not readable: " + why});
    }
    if (!problems.empty()) refuse(file, LoadStage::negotiate, problems);
    trace(LoadStage::negotiate, file, "agreed on ABI " + abi_version_text(n.chosen_abi_version));
    return n;
}

// Stage validate: read no further than the table's own size says.
void validate_stage(const kvblob_plugin_t &t, uint32_t chosen_abi_version, const std::string &file)
{
    if (t.struct_size < KVBLOB_PLUGIN_SIZE_1_0)
        refuse(file, LoadStage::validate,
               {{"R-LOAD-4", "plugin table struct_size " + std::to_string(t.struct_size) +
                                 " is smaller than ABI 1.0's " + std::to_string(KVBLOB_PLUGIN_SIZE_1_0)}});
    if (auto why = unreadable(&t, std::min<size_t>(t.struct_size, sizeof t)); !why.empty())
        refuse(file, LoadStage::validate,
               {{"R-LOAD-4", "plugin table of struct_size " + std::to_string(t.struct_size) + " is not readable: " + why}});
    std::vector<LoadProblem> problems;
    if (t.abi_version != chosen_abi_version)
        problems.push_back({"R-LOAD-4", "the table says ABI " + abi_version_text(t.abi_version) +
                                            " but negotiation chose " + abi_version_text(chosen_abi_version)});
    if (t.reserved != 0) problems.push_back({"R-LOAD-4", "the table's reserved member is not zero"});
    if (t.contract_version == 0) problems.push_back({"R-LOAD-4", "contract_version is 0"});
    check_slots(t, problems);
    check_identity(t, problems);
    check_options(t, chosen_abi_version, problems);
    if (!problems.empty()) refuse(file, LoadStage::validate, problems);
    trace(LoadStage::validate, file, std::string("ok: driver '") + t.name + "' " + t.version);
}

}  // namespace

// The stages in turn (LoadStage): open, entry, negotiate, validate; stage
// init runs at Plugin::open.
Plugin Plugin::load(const std::string &spec, const LoadOptions &options)
{
    Opened opened = open_stage(spec, options);
    const kvblob_negotiate_fn entry = entry_stage(*opened.library, opened.file);
    const kvblob_negotiation_t n = negotiate_stage(entry, opened.file, options);
    const kvblob_plugin_t &t = *n.plugin;
    validate_stage(t, n.chosen_abi_version, opened.file);
    // Found by its short name: the name asked for must be the one answering.
    if (!names_a_file(spec)) warn_if_misnamed(*opened.found, t.name);

    Plugin plugin;
    plugin.library_ = std::move(opened.library);
    plugin.path_ = opened.file;
    plugin.table_ = &t;
    plugin.abi_version_ = n.chosen_abi_version;
    plugin.lend_notify_ = options.lend_notify;
    plugin.count_metrics_ = options.count_metrics;
    return plugin;
}

bool Plugin::secret_option(std::string_view name) const
{
    if (const auto *flags = option_flags(*table_, abi_version_)) {
        std::vector<std::string> flagged;
        for (uint64_t i = 0; i < table_->option_count; ++i) {
            if (!table_->options[i].name) continue;
            if (name == table_->options[i].name) return (flags[i] & KVBLOB_OPTION_FLAG_SECRET) != 0;
            if (flags[i] & KVBLOB_OPTION_FLAG_SECRET) flagged.emplace_back(table_->options[i].name);
        }
        // Not an option of the driver's: a misspelling of one it flags
        // secret ("pasword", "tokne") holds the secret all the same.
        if (!nearest_name(std::string(name), flagged).empty()) return true;
    }
    // A 1.0 driver cannot mark its secrets, and an unknown option may be
    // anything: judge by the name, erring on the side of hiding.
    return looks_secret(name);
}

Options Plugin::redacted(const Options &options) const
{
    Options out = options;
    for (auto &[key, value] : out)
        if (secret_option(key, options) || holds_credentials(value)) value = redacted_value;
    return out;
}

std::vector<std::string> Plugin::secrets_in(const Options &options) const
{
    std::vector<std::string> out;
    for (const auto &[key, value] : options) {
        if (secret_option(key, options) && !value.empty()) out.push_back(value);
        for (auto &c : credentials_in(value)) out.push_back(std::move(c));
    }
    // Longest first: a secret that holds another is replaced whole.
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.size() > b.size(); });
    return out;
}

std::vector<kvblob_option_desc_t> Plugin::options() const
{
    if (!table_->options) return {};
    return {table_->options, table_->options + table_->option_count};
}

Driver Plugin::open(const Options &options, LogSink log, NotifySink observe, const std::string &metrics_label) const
{
    const std::string file = path_.string();
    if (const std::string problem = metrics_label_problem(metrics_label); !problem.empty())
        throw std::invalid_argument("the metrics label of driver " + name() + " " + problem);
    trace(LoadStage::init, file, "open with " + std::to_string(options.size()) + " option(s)");
    std::vector<kvblob_option_t> raw;
    raw.reserve(options.size());
    for (const auto &[key, value] : options)
        raw.push_back({sizeof(kvblob_option_t), 0, key.c_str(), value.c_str()});

    // What the driver says is read with its secrets taken out: a driver may
    // repeat a URL with a password in it, in a refusal or a log line.
    const auto secrets = secrets_in(options);
    LogSink sink = log ? std::move(log) : stderr_log_sink(name());
    if (!secrets.empty())
        sink = [secrets, inner = std::move(sink)](kvblob_log_level level, const std::string &message) {
            inner(level, without_secrets(message, secrets));
        };
    auto core = std::make_shared<DriverCore>(library_, table_, name(), std::move(sink), abi_version_,
                                             std::move(observe), lend_notify_, metrics_label,
                                             count_metrics_);
    core->secrets = secrets;
    kvblob_open_args_t args{};
    args.struct_size = sizeof args;
    args.abi_version = abi_version_;
    args.options = raw.data();
    args.option_count = raw.size();
    args.host = core->services();
    // Sized for the negotiated version, so a driver writes no member that
    // version does not define.
    kvblob_caps_t caps{};
    caps.struct_size = abi_version_ >= KVBLOB_ABI_1_1 ? sizeof caps : KVBLOB_CAPS_SIZE_1_0;
    char err[1024] = {0};
    kvblob_driver_t *handle = nullptr;
    kvblob_status st = core->call(&kvblob_plugin_t::open, "open", KVBLOB_E_INTERNAL, &args, &caps, &handle,
                                  static_cast<char *>(err), static_cast<uint32_t>(sizeof err));
    err[sizeof err - 1] = '\0';
    if (st != KVBLOB_OK || !handle) {
        std::string reason = std::string("open answered ") + kvblob_status_name(st);
        if (st == KVBLOB_OK) reason += " with a NULL driver";
        // A message that fills the buffer may have been cut inside a secret.
        const bool filled = std::strlen(err) == sizeof err - 1;
        reason += err[0] ? std::string(": ") + without_secrets(err, secrets, filled ? TextEnd::maybe_cut : TextEnd::whole)
                         : std::string(" without a message");
        refuse(file, LoadStage::init, {{st == KVBLOB_E_BAD_OPTION ? "R-OPN-1" : "R-LOAD-9", reason}});
    }
    if (abi_version_ < KVBLOB_ABI_1_1) caps.access_end_bound_ns = 0;  // not a 1.0 member
    core->adopt(handle, caps);
    auto problems = check_caps(*table_, abi_version_, caps, *core->services());
    if (auto why = adopt_scenarios(*core, *library_); !why.empty()) problems.push_back({"R-LOAD-12", why});
    if (!problems.empty()) {
        core->shutdown(std::chrono::seconds(1));
        refuse(file, LoadStage::init, problems);
    }
    core->publish_metrics();
    trace(LoadStage::init, file, "ready");
    return Driver(std::move(core));
}

}  // namespace kvblob
