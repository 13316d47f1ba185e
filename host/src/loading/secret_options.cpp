// The name-based guess at which options hold secrets, for drivers that cannot
// mark them (ABI 1.0). It errs towards hiding: a hidden value costs a reader
// a look at the command line; a printed password costs the store.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

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
    const auto decoded = [](std::string_view text) {
        std::string s;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
                std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
                s += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
                i += 2;
            } else {
                s += text[i];
            }
        }
        return s;
    };
    // Each URL's userinfo password (a seed list holds several URLs).
    for (size_t from = value.find("://"); from != std::string_view::npos; from = value.find("://", from + 3)) {
        const auto authority = value.substr(from + 3);
        const auto userinfo = authority.substr(0, authority.substr(0, authority.find_first_of("/?#,")).rfind('@'));
        if (userinfo.size() == authority.size()) continue;  // no '@'
        if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
            out.emplace_back(userinfo.substr(colon + 1));
            out.push_back(decoded(userinfo.substr(colon + 1)));
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

std::string without_secrets(std::string text, const std::vector<std::string> &secrets)
{
    for (const auto &secret : secrets) {
        if (secret.size() < min_scrubbed_secret) continue;
        for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 1))
            text.replace(at, secret.size(), removed_secret);
    }
    return text;
}

}  // namespace kvblob
