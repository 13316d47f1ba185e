// The forms open.secret-unspoken looks for a secret in (R-OPN-2): each found
// where a driver writes it so, none found in text that merely resembles it.
#include <doctest/doctest.h>

#include <string>

#include "secret_forms.hpp"

using kvblob::conformance::secret_form_in;

TEST_CASE("secret forms: the secret as given, in other case, percent-encoded, in hex and in base64")
{
    const std::string secret = "kvbc-secret-3f9zq1@/:+";
    CHECK(secret_form_in("token " + secret + " used", secret) == "as given");
    CHECK(secret_form_in("TOKEN KVBC-SECRET-3F9ZQ1@/:+", secret) == "in other letter case");
    CHECK(secret_form_in("Kvbc-Secret-3f9zQ1@/:+", secret) == "in other letter case");
    CHECK(secret_form_in("mem://u:kvbc-secret-3f9zq1%40%2F%3A%2B@h/", secret) == "percent-encoded");
    CHECK(secret_form_in("mem://u:kvbc-secret-3f9zq1%40%2f%3a%2b@h/", secret) == "percent-encoded");
    CHECK(secret_form_in("%6b%76%62%63-secret-3f9zq1@/:+", secret) == "percent-encoded");
    // Hex, with or without separators, in either case.
    std::string hex, spaced;
    char byte[4];
    for (unsigned char c : secret) {
        std::snprintf(byte, sizeof byte, "%02x", c), hex += byte;
        std::snprintf(byte, sizeof byte, " %02X", c), spaced += byte;
    }
    CHECK(secret_form_in("key=" + hex, secret) == "in hex");
    CHECK(secret_form_in("bytes:" + spaced, secret) == "in hex");
    // Base64 at each alignment, standard and URL-safe, with line breaks.
    CHECK(secret_form_in("Basic a3ZiYy1zZWNyZXQtM2Y5enExQC86Kw==", secret) == "in base64");  // "kvbc-secret-3f9zq1@/:+"
    CHECK(secret_form_in("Basic dTprdmJjLXNlY3JldC0zZjl6cTFALzor", secret) == "in base64");  // "u:" + secret
    CHECK(secret_form_in("Basic dXM6a3ZiYy1zZWNyZXQtM2Y5enExQC86Kw==", secret) == "in base64");  // "us:" + secret
    CHECK(secret_form_in("Basic dTprdmJjLXNlY3Jl\nZC0zZjl6cTFALzor", secret).empty());  // one letter changed
    CHECK(secret_form_in("Basic dTprdmJjLXNl\nY3JldC0zZjl6cTFALzor", secret) == "in base64");
}

TEST_CASE("secret forms: text that only resembles the secret carries none")
{
    const std::string secret = "kvbc-secret-3f9zq1@/:+";
    CHECK(secret_form_in("", secret).empty());
    CHECK(secret_form_in("opened store 'default' with token '<redacted>'", secret).empty());
    CHECK(secret_form_in("kvbc-secret-3f9zq1", secret).empty());  // a prefix is not the secret
    CHECK(secret_form_in("deadbeef 0123456789abcdef cafe", secret).empty());
    CHECK(secret_form_in("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", secret).empty());
    CHECK(secret_form_in("100% done, 50%% left, %zz", secret).empty());
}
