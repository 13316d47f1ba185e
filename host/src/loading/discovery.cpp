#include "kvblob/host/discovery.hpp"

#include <dlfcn.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <system_error>

namespace kvblob {

namespace fs = std::filesystem;

bool names_a_file(const std::string &spec)
{
    return spec.find('/') != std::string::npos ||
           (spec.size() > 3 && spec.compare(spec.size() - 3, 3, ".so") == 0) ||
           spec.find(".so.") != std::string::npos;
}

std::string plugin_file_name(const std::string &name) { return "libkvblob_" + name + ".so"; }

namespace {

// The folder holding this host library: plugins live in its kvblob/ child,
// in the build tree and in an install alike.
fs::path host_library_dir()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&host_library_dir), &info) == 0 || !info.dli_fname)
        return {};
    std::error_code ec;
    auto path = fs::canonical(info.dli_fname, ec);
    return ec ? fs::path(info.dli_fname).parent_path() : path.parent_path();
}

}  // namespace

std::vector<fs::path> plugin_search_dirs(const std::vector<fs::path> &extra_dirs)
{
    std::vector<fs::path> dirs;
    // A setuid program must not let its caller choose the code it loads.
    const char *env = getauxval(AT_SECURE) ? nullptr : std::getenv(driver_path_env);
    if (env) {
        std::string all(env);
        size_t start = 0;
        while (start <= all.size()) {
            size_t end = all.find(':', start);
            if (end == std::string::npos) end = all.size();
            if (end > start) dirs.emplace_back(all.substr(start, end - start));
            start = end + 1;
        }
    }
    dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
    if (auto own = host_library_dir(); !own.empty()) dirs.push_back(own / "kvblob");
    // A folder named twice (KVBLOB_DRIVER_PATH=build/lib/kvblob beside the
    // host's own /abs/build/lib/kvblob) is searched, and listed in a
    // refusal, once.
    std::vector<fs::path> unique;
    for (auto &dir : dirs) {
        const auto same = [&](const fs::path &seen) {
            std::error_code ec;
            return seen == dir || fs::equivalent(seen, dir, ec);
        };
        if (std::none_of(unique.begin(), unique.end(), same)) unique.push_back(std::move(dir));
    }
    return unique;
}

std::vector<fs::path> library_search_dirs()
{
    std::vector<fs::path> dirs;
    void *self = dlopen(nullptr, RTLD_LAZY);
    if (!self) return dirs;
    Dl_serinfo size{};
    if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && size.dls_size >= sizeof(Dl_serinfo)) {
        // Dl_serinfo is followed by the strings it points to: one buffer,
        // aligned for the struct.
        std::vector<std::max_align_t> buf((size.dls_size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
        auto *info = reinterpret_cast<Dl_serinfo *>(buf.data());
        *info = size;
        if (dlinfo(self, RTLD_DI_SERINFOSIZE, info) == 0 && dlinfo(self, RTLD_DI_SERINFO, info) == 0)
            for (unsigned i = 0; i < info->dls_cnt; ++i)
                if (info->dls_serpath[i].dls_name && info->dls_serpath[i].dls_name[0] == '/')
                    dirs.emplace_back(info->dls_serpath[i].dls_name);
    }
    dlclose(self);
    return dirs;
}

std::optional<fs::path> find_plugin(const std::string &spec, const std::vector<fs::path> &extra_dirs)
{
    if (spec.find('/') != std::string::npos) return fs::path(spec);
    const bool bare_file = names_a_file(spec);
    auto dirs = plugin_search_dirs(extra_dirs);
    if (bare_file)
        for (auto &d : library_search_dirs()) dirs.push_back(std::move(d));
    const std::string name = bare_file ? spec : plugin_file_name(spec);
    for (const auto &dir : dirs) {
        auto candidate = dir / name;
        std::error_code ec;
        // Whatever holds the name is the one file meant (a FIFO too: the
        // loader refuses it by name rather than look further).
        if (fs::exists(candidate, ec)) return candidate;
    }
    return std::nullopt;
}

}  // namespace kvblob
