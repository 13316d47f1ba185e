// The little JSON the tools write: quoted strings and arrays of them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvblob {

// Returns s as a quoted JSON string.
std::string json_quote(std::string_view s);

// Returns items as a JSON array of strings.
std::string json_string_array(const std::vector<std::string> &items);

}  // namespace kvblob
