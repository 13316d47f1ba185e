// Text from outside (a config file, a driver's message, a file name) made
// safe to print: a terminal never sees a control character from it.
#pragma once

#include <string>
#include <string_view>

namespace kvblob {

// text with every control character escaped: C0 controls and DEL as \n, \t,
// \r, \e or \xHH (NUL as \0), C1 controls (U+0080..U+009F, two bytes in
// UTF-8, such as the CSI that starts an escape sequence) as \u00HH, and a
// backslash that precedes them left as it is. Printable UTF-8 is kept.
std::string printable(std::string_view text);

}  // namespace kvblob
