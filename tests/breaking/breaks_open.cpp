// Breaks of negotiation and open, made at the table: the options handed to
// the reference are rewritten, its refusals reworded, the capabilities it
// filled in misdeclared, a secret repeated (R-CAP-1, R-CAP-2, R-OPN-1,
// R-OPN-2, R-CON-1).
#include "hook.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// The options open is given, owned, to rewrite before the reference reads them.
struct Options {
    std::vector<std::pair<std::string, std::string>> given;
    std::vector<kvblob_option_t> table;
    explicit Options(const kvblob_open_args_t &args)
    {
        for (uint64_t i = 0; i < args.option_count; ++i)
            given.emplace_back(args.options[i].key ? args.options[i].key : "",
                               args.options[i].value ? args.options[i].value : "");
    }
    // args, with these options in place of the ones given.
    kvblob_open_args_t over(const kvblob_open_args_t &args)
    {
        table.clear();
        for (const auto &[k, v] : given) table.push_back({sizeof(kvblob_option_t), 0, k.c_str(), v.c_str()});
        kvblob_open_args_t a = args;
        a.options = table.data();
        a.option_count = table.size();
        return a;
    }
};

const kvblob_option_desc_t *described(const kvblob_plugin_t &t, const std::string &key)
{
    for (uint64_t i = 0; i < t.option_count; ++i)
        if (key == t.options[i].name) return &t.options[i];
    return nullptr;
}

bool any_unknown(const kvblob_plugin_t &t, const kvblob_open_args_t &args)
{
    for (uint64_t i = 0; i < args.option_count; ++i)
        if (args.options[i].key && !described(t, args.options[i].key)) return true;
    return false;
}

void say(char *err, uint32_t cap, const std::string &text)
{
    if (err && cap) std::snprintf(err, cap, "%s", text.c_str());
}

// m.cap2.newest-table-always: answers a 1.0 host with the table laid out for 1.1.
struct NewestTable : Break {
    uint32_t table_version(uint32_t) override { return KVBLOB_ABI_1_1; }
};
const Registered newest("m.cap2.newest-table-always", make<NewestTable>);

// A Break that changes what the reference declared at open.
template <class F>
struct Declares : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK) F{}(h, *args, *caps), h.caps = *caps;
        return st;
    }
};
template <class F>
std::unique_ptr<Break> declares()
{
    return std::make_unique<Declares<F>>();
}

// open.capabilities-fixed: declares other limits every other time.
struct OtherLimits {
    void operator()(Hooked &, const kvblob_open_args_t &, kvblob_caps_t &caps)
    {
        static std::atomic<uint64_t> opened{0};
        caps.max_rows_per_op -= opened++ % 2;
    }
};
const Registered fixed("open.capabilities-fixed", declares<OtherLimits>);

// m.cap1.probe-alternates: features negotiated per connection with servers that disagree.
struct ProbeAlternates {
    void operator()(Hooked &, const kvblob_open_args_t &, kvblob_caps_t &caps)
    {
        static std::atomic<uint64_t> opened{0};
        if (opened++ % 2) caps.flags &= ~KVBLOB_CAP_PROBE;
    }
};
const Registered alternates("m.cap1.probe-alternates", declares<ProbeAlternates>);

// m.cap2.bound-bit-at-1-0: a 1.1 bit declared to a 1.0 host.
struct BoundBitAt1_0 {
    void operator()(Hooked &h, const kvblob_open_args_t &, kvblob_caps_t &caps)
    {
        if (h.abi_version < KVBLOB_ABI_1_1) caps.flags |= KVBLOB_CAP_ACCESS_BOUND;
    }
};
const Registered bound_bit("m.cap2.bound-bit-at-1-0", declares<BoundBitAt1_0>);

// open.abi-1.0: the whole record filled, whatever its struct_size says.
struct BoundPastRecord {
    void operator()(Hooked &h, const kvblob_open_args_t &args, kvblob_caps_t &caps)
    {
        const char *delay = option_value(args, "access_delay_ms");
        if (h.abi_version < KVBLOB_ABI_1_1)
            caps.access_end_bound_ns = std::strtoull(delay ? delay : "0", nullptr, 10) * 1'000'000ull;
    }
};
const Registered past_record("open.abi-1.0", declares<BoundPastRecord>);

// m.cap1.limits-shared: the store's budget split between the drivers open on it.
struct LimitsShared : Break {
    static std::map<std::string, int> &open_on()
    {
        static std::map<std::string, int> stores;
        return stores;
    }
    static std::mutex &mu()
    {
        static std::mutex m;
        return m;
    }
    std::string store;
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st != KVBLOB_OK) return st;
        const char *name = option_value(*args, "store");
        store = name ? name : "default";
        std::lock_guard lock(mu());
        caps->max_ops_in_flight = std::max<uint64_t>(1, caps->max_ops_in_flight / ++open_on()[store]);
        h.caps = *caps;
        return st;
    }
    kvblob_status close(Hooked &h) override
    {
        kvblob_status st = h.next->close(h.inner);
        std::lock_guard lock(mu());
        if (st == KVBLOB_OK) --open_on()[store];
        return st;
    }
};
const Registered shared("m.cap1.limits-shared", make<LimitsShared>);

// concurrency.two-drivers: same options, different store.
struct PrivateStore : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        static std::atomic<int> opened{0};
        Options o(*args);
        bool named = false;
        for (auto &[k, v] : o.given)
            if (k == "store") v += "#private-" + std::to_string(opened++), named = true;
        if (!named) o.given.emplace_back("store", "default#private-" + std::to_string(opened++));
        kvblob_open_args_t a = o.over(*args);
        return Break::open(h, &a, caps, err, cap);
    }
};
const Registered two_drivers("concurrency.two-drivers", make<PrivateStore>);

// open.unknown-option: an unknown option ignored silently.
struct IgnoresUnknown : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        Options o(*args);
        std::erase_if(o.given, [&](const auto &kv) { return !described(*h.next, kv.first); });
        kvblob_open_args_t a = o.over(*args);
        return Break::open(h, &a, caps, err, cap);
    }
};
const Registered unknown("open.unknown-option", make<IgnoresUnknown>);

// m.opn1.message-without-name / m.opn2.unknown-lists-given: an unknown option
// refused with a message that names none, or that lists every option given.
template <bool Lists>
struct UnknownWorded : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st != KVBLOB_E_BAD_OPTION || !any_unknown(*h.next, *args)) return st;
        if (!Lists) {
            say(err, cap, "unknown option");
            return st;
        }
        std::string given;  // "to help": every option given, with its value
        for (uint64_t j = 0; j < args->option_count; ++j)
            given += std::string(" ") + args->options[j].key + "=" + args->options[j].value;
        say(err, cap, std::string(err ? err : "") + "; given:" + given);
        return st;
    }
};
const Registered without_name("m.opn1.message-without-name", make<UnknownWorded<false>>);
const Registered lists_given("m.opn2.unknown-lists-given", make<UnknownWorded<true>>);

// open.bad-value: a value that does not parse is dropped, and the default taken silently.
struct BadValueAccepted : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        Options o(*args);
        for (size_t tries = 0; tries <= o.given.size(); ++tries) {
            std::vector<char> why(512);
            kvblob_open_args_t a = o.over(*args);
            kvblob_status st = Break::open(h, &a, caps, why.data(), static_cast<uint32_t>(why.size()));
            const std::string text = why.data();
            const size_t at = text.find("option '");
            if (st != KVBLOB_E_BAD_OPTION || at == std::string::npos || any_unknown(*h.next, a)) {
                say(err, cap, text);
                return st;
            }
            const std::string name = text.substr(at + 8, text.find('\'', at + 8) - at - 8);
            std::erase_if(o.given, [&](const auto &kv) { return kv.first == name; });
        }
        return KVBLOB_E_BAD_OPTION;
    }
};
const Registered bad_value("open.bad-value", make<BadValueAccepted>);

// m.opn1.bool-lenient: a boolean that is not one reads as false.
struct BoolLenient : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        static const std::set<std::string> booleans = {"1", "true", "yes", "on", "0", "false", "no", "off"};
        Options o(*args);
        for (auto &[k, v] : o.given)
            if (const auto *d = described(*h.next, k); d && d->type == KVBLOB_OPTION_BOOL && !booleans.count(v))
                v = "false";
        kvblob_open_args_t a = o.over(*args);
        return Break::open(h, &a, caps, err, cap);
    }
};
const Registered bool_lenient("m.opn1.bool-lenient", make<BoolLenient>);

// open.secret-unspoken: a secret repeated in a log line.
struct TokenLogged : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        const char *store = option_value(*args, "store");
        const char *token = option_value(*args, "token");
        if (st == KVBLOB_OK)
            h.log(KVBLOB_LOG_INFO, std::string("opened store '") + (store ? store : "default") + "' with token '" +
                                       (token ? token : "") + "'");
        return st;
    }
};
const Registered secret_logged("open.secret-unspoken", make<TokenLogged>);

// A secret repeated in a form the host does not take out (it removes the
// value only as given): Form turns the token into the lines logged.
template <class Form>
struct TokenLoggedAs : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        const char *token = option_value(*args, "token");
        if (st == KVBLOB_OK && token && *token)
            for (const auto &line : Form{}(token)) h.log(KVBLOB_LOG_INFO, line);
        return st;
    }
};
template <class Form>
std::unique_ptr<Break> logs_token_as()
{
    return std::make_unique<TokenLoggedAs<Form>>();
}

// m.opn2.secret-upper-case: the token upper-cased.
struct UpperCase {
    std::vector<std::string> operator()(std::string t)
    {
        for (auto &c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return {"session " + t};
    }
};
const Registered secret_upper("m.opn2.secret-upper-case", logs_token_as<UpperCase>);

// m.opn2.secret-hex: the token as a hex dump of its bytes.
struct Hex {
    std::vector<std::string> operator()(const std::string &t)
    {
        std::string line = "auth bytes:";
        char byte[4];
        for (unsigned char c : t) std::snprintf(byte, sizeof byte, " %02X", c), line += byte;
        return {line};
    }
};
const Registered secret_hex("m.opn2.secret-hex", logs_token_as<Hex>);

// m.opn2.secret-base64: the token in a Basic authorization header.
struct Base64 {
    std::vector<std::string> operator()(const std::string &t)
    {
        static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const std::string in = "kvblob:" + t;  // user:password, as Basic writes it
        std::string out;
        for (size_t i = 0; i < in.size(); i += 3) {
            uint32_t v = 0;
            for (size_t k = 0; k < 3; ++k) v = (v << 8) | (i + k < in.size() ? static_cast<unsigned char>(in[i + k]) : 0);
            for (size_t k = 0; k < 4; ++k) out += i + k <= in.size() ? alphabet[(v >> (18 - 6 * k)) & 63] : '=';
        }
        return {"sending Authorization: Basic " + out};
    }
};
const Registered secret_base64("m.opn2.secret-base64", logs_token_as<Base64>);

// m.opn2.secret-percent-encoded: the token in a URL's userinfo, every byte
// but letters and digits encoded (as the strictest encoders do: a token of
// letters, digits and '-' alone still changes).
struct PercentEncoded {
    std::vector<std::string> operator()(const std::string &t)
    {
        std::string line = "connecting to mem://kvblob:";
        char byte[4];
        for (unsigned char c : t) {
            if (std::isalnum(c)) line += static_cast<char>(c);
            else std::snprintf(byte, sizeof byte, "%%%02X", c), line += byte;
        }
        return {line + "@localhost/"};
    }
};
const Registered secret_percent("m.opn2.secret-percent-encoded", logs_token_as<PercentEncoded>);

// m.opn2.secret-split-lines: the token's halves on consecutive log lines.
struct SplitLines {
    std::vector<std::string> operator()(const std::string &t)
    {
        return {"token begins " + t.substr(0, t.size() / 2), t.substr(t.size() / 2) + " (token ends)"};
    }
};
const Registered secret_split("m.opn2.secret-split-lines", logs_token_as<SplitLines>);

// m.opn2.fault-message-secret: a secret repeated in a FAULT row's message.
struct TokenInFault : Break {
    std::string token;
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        const char *t = option_value(*args, "token");
        token = t ? t : "";
        return Break::open(h, args, caps, err, cap);
    }
    uint32_t row_message(Hooked &h, kvblob_op_t *op, uint64_t row, char *buf, uint32_t cap) override
    {
        kvblob_row_status_t r{};
        r.struct_size = sizeof r;
        if (token.empty() || h.results(op, row, 1, &r) != KVBLOB_OK || r.result != KVBLOB_ROW_FAULT)
            return h.next->row_message(h.inner, op, row, buf, cap);
        std::string m(h.next->row_message(h.inner, op, row, nullptr, 0) + 1, '\0');
        h.next->row_message(h.inner, op, row, m.data(), static_cast<uint32_t>(m.size()));
        m.resize(m.size() - 1);
        m += " (session " + token + ")";
        say(buf, cap, m);
        return static_cast<uint32_t>(m.size());
    }
};
const Registered fault_secret("m.opn2.fault-message-secret", make<TokenInFault>);

}  // namespace

}  // namespace kvblob::breaking
