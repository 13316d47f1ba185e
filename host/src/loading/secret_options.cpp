// The name-based guess at which options hold secrets, for drivers that cannot
// mark them (ABI 1.0). It errs towards hiding: a hidden value costs a reader
// a look at the command line; a printed password costs the store.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "kvblob/host/percent_decoded.hpp"
#include "kvblob/host/plugin.hpp"

namespace kvblob {

bool looks_secret(std::string_view option_name)
{
    std::string name(option_name);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    // Parts of names, not whole names: "pass" covers password, passwd,
    // passphrase; "cred" credentials; "dsn" a connection string that often
    // holds a password; "private" a private key or certificate.
    static constexpr std::array<std::string_view, 14> words = {
        "pass",   "pwd",    "secret",     "token",     "cred",   "apikey",    "api_key",
        "access_key", "private", "auth", "dsn", "signature", "cookie", "session_key",
    };
    return std::any_of(words.begin(), words.end(),
                       [&](std::string_view w) { return name.find(w) != std::string::npos; });
}

bool holds_credentials(std::string_view value)
{
    // A password given inline: "host=h password=x" (a DSN) or a URL's
    // "?password=x".
    std::string lower(value);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (std::string_view key : {"password=", "passwd=", "pwd="})
        if (lower.find(key) != std::string::npos) return true;

    // scheme://[user]:password@host...: the userinfo ends at the last '@'
    // before the path, and holds a ':' when it carries a password.
    const auto scheme = value.find("://");
    if (scheme == std::string_view::npos) return false;
    const auto authority = value.substr(scheme + 3);
    const auto at = authority.substr(0, authority.find_first_of("/?#")).rfind('@');
    return at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos;
}

}  // namespace kvblob

namespace kvblob {

std::vector<std::string> credentials_in(std::string_view value)
{
    std::vector<std::string> out;
    // Each URL's userinfo password (a seed list holds several URLs).
    for (size_t from = value.find("://"); from != std::string_view::npos; from = value.find("://", from + 3)) {
        const auto authority = value.substr(from + 3);
        const auto userinfo = authority.substr(0, authority.substr(0, authority.find_first_of("/?#,")).rfind('@'));
        if (userinfo.size() == authority.size()) continue;  // no '@'
        if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
            out.emplace_back(userinfo.substr(colon + 1));
            out.push_back(percent_decoded(userinfo.substr(colon + 1)));
        }
    }
    // password=... given inline (a DSN, a URL's query).
    std::string lower(value);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (std::string_view key : {"password=", "passwd=", "pwd="})
        for (size_t at = lower.find(key); at != std::string::npos; at = lower.find(key, at + 1)) {
            const auto start = at + key.size();
            const auto end = value.find_first_of(" \t&;,", start);
            out.emplace_back(value.substr(start, end == std::string_view::npos ? end : end - start));
        }
    std::erase_if(out, [](const std::string &s) { return s.empty(); });
    return out;
}

namespace {

// Marks in covered every byte of text inside an occurrence of secret,
// overlapping occurrences included, and with TextEnd::maybe_cut the
// secret's beginning where the text ends in it. Knuth-Morris-Pratt: linear
// in the text and the secret whatever they hold (find() from each match
// compares the secret again at every position, which for a long secret of
// one repeated letter is quadratic); its state at the text's end is the
// longest beginning of the secret the text ends in.
bool mark_occurrences(std::string_view text, std::string_view secret, std::vector<bool> &covered, TextEnd end)
{
    std::vector<size_t> border(secret.size(), 0);  // longest proper border of secret[0..i]
    for (size_t i = 1, k = 0; i < secret.size(); ++i) {
        while (k > 0 && secret[i] != secret[k]) k = border[k - 1];
        if (secret[i] == secret[k]) ++k;
        border[i] = k;
    }
    bool any = false;
    size_t marked_to = 0;  // matches come in order: mark only what the last left
    size_t k = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        while (k > 0 && text[i] != secret[k]) k = border[k - 1];
        if (text[i] == secret[k]) ++k;
        if (k == secret.size()) {
            const size_t stop = i + 1, begin = std::max(stop - secret.size(), marked_to);
            std::fill(covered.begin() + static_cast<std::ptrdiff_t>(begin),
                      covered.begin() + static_cast<std::ptrdiff_t>(stop), true);
            marked_to = stop;
            any = true;
            k = border[k - 1];
        }
    }
    if (end == TextEnd::maybe_cut && k >= min_scrubbed_secret) {
        std::fill(covered.end() - static_cast<std::ptrdiff_t>(k), covered.end(), true);
        any = true;
    }
    return any;
}

}  // namespace

std::string without_secrets(std::string text, const std::vector<std::string> &secrets, TextEnd end)
{
    // Every occurrence of every secret is found in the text as given, and
    // the text is written once: replacing in place and searching on would
    // search the marker too, and a secret inside it ("host", "ecre") would
    // be replaced forever. Covered bytes, not spans, so secrets that overlap
    // one another (or themselves, "aaaa" in "aaaaaa") become one marker.
    std::vector<bool> covered(text.size(), false);
    bool any = false;
    for (const auto &secret : secrets)
        if (secret.size() >= min_scrubbed_secret && (secret.size() <= text.size() || end == TextEnd::maybe_cut))
            any = mark_occurrences(text, secret, covered, end) || any;
    if (!any) return text;
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (!covered[i]) out += text[i];
        else if (i == 0 || !covered[i - 1]) out += removed_secret;
    }
    return out;
}

}  // namespace kvblob
