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
    static constexpr std::array<std::string_view, 9> words = {
        "password", "passwd", "secret", "token", "credential", "apikey", "api_key", "private_key", "auth",
    };
    return std::any_of(words.begin(), words.end(),
                       [&](std::string_view w) { return name.find(w) != std::string::npos; });
}

}  // namespace kvblob
