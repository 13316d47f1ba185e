// Looking for a secret in the forms a driver writes it in. Each form is
// looked for in full (hex: every byte; base64: every whole group of three
// bytes at each of the three alignments), so a form found is the secret, not
// a chance match: the battery's secrets are at least 8 bytes, 16 hex digits.
#include "secret_forms.hpp"

#include <algorithm>
#include <cctype>

#include "kvblob/host/percent_decoded.hpp"

namespace kvblob::conformance {

namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string hex(std::string_view bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) out += digits[c >> 4], out += digits[c & 15];
    return out;
}

// The standard base64 of bytes' whole groups of three (what follows them is
// encoded with bytes of the text after the secret, so differs).
std::string base64_whole_groups(std::string_view bytes)
{
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                           (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                           static_cast<unsigned char>(bytes[i + 2]);
        for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(v >> shift) & 63];
    }
    return out;
}

// text's characters of one alphabet, in order, the others left out; the
// URL-safe base64 letters read as the standard ones.
std::string hex_digits_of(std::string_view text)
{
    std::string out;
    for (unsigned char c : text)
        if (std::isxdigit(c)) out += static_cast<char>(std::tolower(c));
    return out;
}
std::string base64_chars_of(std::string_view text)
{
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '+' || c == '/') out += static_cast<char>(c);
        else if (c == '-') out += '+';
        else if (c == '_') out += '/';
    }
    return out;
}

}  // namespace

std::string secret_form_in(std::string_view text, std::string_view secret)
{
    if (secret.empty()) return {};
    if (contains(text, secret)) return "as given";
    const std::string low_secret = lower(secret);
    if (contains(lower(text), low_secret)) return "in other letter case";
    if (contains(text, "%") && contains(lower(percent_decoded(text)), low_secret)) return "percent-encoded";
    if (contains(hex_digits_of(text), hex(secret))) return "in hex";
    // The secret starts a group of three at one of three offsets into it.
    const std::string b64 = base64_chars_of(text);
    for (size_t skip = 0; skip < 3 && skip < secret.size(); ++skip) {
        const std::string groups = base64_whole_groups(secret.substr(skip));
        if (groups.size() >= 8 && contains(b64, groups)) return "in base64";
    }
    return {};
}

}  // namespace kvblob::conformance
