// How DriverBase's checks refuse: the words into why, the status returned,
// so that each check reads as its condition and its answer.
#pragma once

#include <kvblob/kvblob.h>

#include <string>
#include <utility>

namespace kvblob::support {

inline kvblob_status refused(std::string &why, kvblob_status status, std::string words)
{
    why = std::move(words);
    return status;
}

}  // namespace kvblob::support
