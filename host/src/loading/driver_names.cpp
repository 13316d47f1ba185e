#include "driver_names.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <system_error>

namespace kvblob {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view prefix = "libkvblob_";
constexpr std::string_view suffix = ".so";

size_t edit_distance(const std::string &a, const std::string &b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string name_in_file_name(const fs::path &file)
{
    const std::string base = file.filename().string();
    if (base.size() <= prefix.size() + suffix.size() || base.compare(0, prefix.size(), prefix) != 0 ||
        base.compare(base.size() - suffix.size(), suffix.size(), suffix) != 0)
        return "";
    return base.substr(prefix.size(), base.size() - prefix.size() - suffix.size());
}

std::vector<std::string> drivers_in(const std::vector<fs::path> &dirs)
{
    std::set<std::string> names;
    for (const auto &dir : dirs) {
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            if (auto name = name_in_file_name(it->path()); !name.empty()) names.insert(name);
    }
    return {names.begin(), names.end()};
}

std::string nearest_name(const std::string &name, const std::vector<std::string> &candidates)
{
    // A typo is a few edits away: at most a third of the name, and at least 2.
    const size_t near_enough = std::max<size_t>(2, name.size() / 3);
    std::string best;
    size_t best_distance = near_enough + 1;
    for (const auto &c : candidates)
        if (size_t d = edit_distance(name, c); d < best_distance) {
            best = c;
            best_distance = d;
        }
    return best;
}

std::string unknown_driver_advice(const std::string &name, const std::vector<fs::path> &dirs)
{
    const auto found = drivers_in(dirs);
    if (found.empty()) return "; no driver plugin (libkvblob_*.so) was found there";
    std::string advice;
    if (auto near = nearest_name(name, found); !near.empty()) advice += "; did you mean '" + near + "'? ";
    else advice += ". ";
    advice += "Drivers found:";
    for (size_t i = 0; i < found.size(); ++i) advice += (i ? ", " : " ") + found[i];
    return advice;
}

void warn_if_misnamed(const fs::path &file, const std::string &table_name)
{
    const auto promised = name_in_file_name(file);
    if (promised.empty() || promised == table_name) return;
    std::fprintf(stderr,
                 "kvblob-loader: warning: %s is named for driver '%s' but calls itself '%s' (R-LOAD-6): "
                 "engines find a driver by its file name; give both the same name (kvblob_driver(TARGET NAME "
                 "name) in CMake defines KVBLOB_DRIVER_NAME for the table)\n",
                 file.string().c_str(), promised.c_str(), table_name.c_str());
}

}  // namespace kvblob
