// The one piece of JSON the tools need: escaping a string.
#pragma once

#include <string>
#include <string_view>

namespace kvblob {

// Returns s as a quoted JSON string.
std::string json_quote(std::string_view s);

}  // namespace kvblob
