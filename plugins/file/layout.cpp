#include "layout.hpp"

#include <kvblob/support/trailer.hpp>

#include <sys/stat.h>

#include <cerrno>

namespace kvblob::file {

ObjectPaths paths_for(const std::string &root, unsigned fanout, std::string_view key)
{
    static constexpr char hex[] = "0123456789abcdef";
    ObjectPaths p;
    p.digest = support::key_digest(key);
    char name[2 * sizeof p.digest];
    for (size_t i = 0; i < p.digest.size(); ++i) {
        name[2 * i] = hex[p.digest[i] >> 4];
        name[2 * i + 1] = hex[p.digest[i] & 15];
    }
    std::string &o = p.object;
    o.reserve(root.size() + 3 * fanout + 1 + sizeof name + object_suffix.size());
    o = root;
    for (unsigned level = 0; level < fanout; ++level) {
        o += '/';
        o.append(name + 2 * level, 2);
    }
    p.dir_length = o.size();
    o += '/';
    o.append(name, sizeof name);
    o += object_suffix;
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
