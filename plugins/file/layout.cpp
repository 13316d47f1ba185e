#include "layout.hpp"

#include <kvblob/support/trailer.hpp>

#include <sys/stat.h>

#include <cerrno>

namespace kvblob::file {

ObjectPaths paths_for(const std::string &root, unsigned fanout, std::string_view key)
{
    static constexpr char hex[] = "0123456789abcdef";
    const auto digest = support::key_digest(key);
    std::string name;
    name.reserve(2 * digest.size());
    for (uint8_t b : digest) {
        name += hex[b >> 4];
        name += hex[b & 15];
    }
    ObjectPaths p;
    p.dir = root;
    for (unsigned level = 0; level < fanout; ++level) p.dir += "/" + name.substr(2 * level, 2);
    p.object = p.dir + "/" + name + std::string(object_suffix);
    p.reservation = p.dir + "/" + name + std::string(reservation_suffix);
    return p;
}

int make_dirs(const std::string &root, const std::string &dir)
{
    // Each level below root, shortest first; another process creating the
    // same directory at the same time is fine.
    for (size_t at = root.size() + 1; at <= dir.size(); ++at) {
        if (at != dir.size() && dir[at] != '/') continue;
        std::string level = dir.substr(0, at);
        if (::mkdir(level.c_str(), 0755) != 0 && errno != EEXIST) return errno;
    }
    return 0;
}

}  // namespace kvblob::file
