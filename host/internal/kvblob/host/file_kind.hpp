// What a path that is not a regular file is, in words, for the refusals
// that name it: the loader's (R-LOAD-1, host/src/loading/plugin_file.cpp)
// and a config file's (host/src/engine_helpers/config_text.cpp).
#pragma once

#include <sys/stat.h>

#include <string>

namespace kvblob {

// "a folder", "a FIFO (named pipe)", ...; empty for a regular file.
inline std::string file_kind(mode_t mode)
{
    if (S_ISREG(mode)) return {};
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

}  // namespace kvblob
