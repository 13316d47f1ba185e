#include "leftover.hpp"

#include <sstream>

namespace kvblob::conformance {

std::string to_text(const Leftover &left)
{
    std::string text = left.known ? std::to_string(left.keys) + (left.keys == 1 ? " key, " : " keys, ") +
                                        std::to_string(left.bytes) + " bytes"
                                  : "unknown";
    return left.why.empty() ? text : text + " (" + left.why + ")";
}

std::string to_wire(const Leftover &left)
{
    std::string why = left.why;
    for (char &ch : why)
        if (ch == '\n') ch = ' ';  // one line
    return "left " + std::to_string(left.keys) + " " + std::to_string(left.bytes) + " " + (left.known ? "1" : "0") +
           " " + why;
}

Leftover from_wire(const std::string &line)
{
    Leftover left;
    std::istringstream in(line);
    std::string word;
    int known = 0;
    if (!(in >> word >> left.keys >> left.bytes >> known) || word != "left")
        return {0, 0, false, "the check's report of what it left was unreadable"};
    left.known = known != 0;
    std::getline(in >> std::ws, left.why);
    return left;
}

}  // namespace kvblob::conformance
