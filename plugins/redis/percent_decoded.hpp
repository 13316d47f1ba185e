// A Redis URL's userinfo, percent-decoded (redis://USER:PASSWORD@HOST:PORT,
// RFC 3986): the driver's login, and kvblob-bench's hiredis baseline, which
// logs in to the same server as the driver does (bench/src/hiredis_baseline.cpp).
// Header only, so the bench takes nothing else of the driver.
#pragma once

#include <cctype>
#include <string>

namespace kvblob::redis {

// text with each %XX (two hex digits) replaced by its byte; a % not
// followed by two hex digits stays as it is.
inline std::string percent_decoded(const std::string &text)
{
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
            out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace kvblob::redis
