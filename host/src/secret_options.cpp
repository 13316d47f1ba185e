// The name-based guess at which options hold secrets, for drivers that cannot
// mark them (ABI 1.0). It errs towards hiding: a hidden value costs a reader
// a look at the command line; a printed password costs the store.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

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
