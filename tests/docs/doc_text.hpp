// Reading the project's documents in tests: a whole file, and the rule ids
// (R-AREA-N) a text names.
#pragma once

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

inline std::string slurp(const std::filesystem::path &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::set<std::string> rule_ids_in(const std::string &text)
{
    std::set<std::string> ids;
    const std::regex id(R"(R-[A-Z]+-[0-9]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator(); ++it)
        ids.insert(it->str());
    return ids;
}
