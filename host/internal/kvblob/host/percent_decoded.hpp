// Percent-decoding (RFC 3986 %XX), as in a URL's userinfo: the host's
// guess at the passwords in a URL option (host/src/loading/secret_options.cpp)
// and the battery's search for a secret in the forms a driver may write it
// in (conformance-runner/src/secret_forms.cpp) decode alike. The Redis
// driver keeps its own (plugins/redis/percent_decoded.hpp): drivers include
// nothing of the host.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace kvblob {

// text with each %XX (two hex digits) replaced by its byte; a % not
// followed by two hex digits stays as it is.
inline std::string percent_decoded(std::string_view text)
{
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace kvblob
