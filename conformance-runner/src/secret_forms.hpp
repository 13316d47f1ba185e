// The forms in which a driver may repeat a secret it was given (R-OPN-2):
// the host takes the secret out of what a driver says only as it was given,
// so the battery looks for it in the forms a driver's own code commonly
// writes it in as well.
#pragma once

#include <string>
#include <string_view>

namespace kvblob::conformance {

// How text carries secret, in words ("as given", "in other letter case",
// "percent-encoded", "in hex", "in base64"); empty when it carries it in
// none of them. Hex and base64 are read with whatever separates their
// characters (spaces, colons, line breaks) left out, and base64 at any
// alignment within a longer encoding, its URL-safe alphabet too.
std::string secret_form_in(std::string_view text, std::string_view secret);

}  // namespace kvblob::conformance
