#include "kvblob/host/discovery.hpp"

#include <dlfcn.h>
#include <sys/auxv.h>

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
    return dirs;
}

std::optional<fs::path> find_plugin(const std::string &spec, const std::vector<fs::path> &extra_dirs)
{
    if (names_a_file(spec)) return fs::path(spec);
    for (const auto &dir : plugin_search_dirs(extra_dirs)) {
        auto candidate = dir / plugin_file_name(spec);
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec)) return candidate;
    }
    return std::nullopt;
}

}  // namespace kvblob
