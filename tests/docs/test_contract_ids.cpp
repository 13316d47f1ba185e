// docs/contract.md is the source of truth for rule ids: every id the headers
// (abi/) or the battery (conformance-runner/) name is defined there, and
// every id defined there is named by one of them. Everything read here lies
// inside the repository.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <vector>
#include <set>
#include <string>

#include "docs/doc_text.hpp"

namespace fs = std::filesystem;

namespace {

// Every rule id in the source files under dir (headers and C/C++ sources).
std::set<std::string> ids_under(const fs::path &dir)
{
    std::set<std::string> ids;
    for (const auto &entry : fs::recursive_directory_iterator(dir)) {
        const auto ext = entry.path().extension();
        if (!entry.is_regular_file() || (ext != ".h" && ext != ".hpp" && ext != ".c" && ext != ".cpp")) continue;
        for (const auto &id : rule_ids_in(slurp(entry.path()))) ids.insert(id);
    }
    return ids;
}

std::string join(const std::set<std::string> &ids)
{
    std::string out;
    for (const auto &id : ids) out += (out.empty() ? "" : " ") + id;
    return out;
}

}  // namespace

TEST_CASE("docs/contract.md defines every rule id the headers and the battery name, and no other")
{
    const fs::path source(KVBLOB_SOURCE_DIR);
    const auto contract = rule_ids_in(slurp(source / "docs/contract.md"));
    const auto headers = ids_under(source / "abi");
    const auto battery = ids_under(source / "conformance-runner");
    REQUIRE(contract.size() >= 40);

    std::set<std::string> missing, unused;
    for (const auto *named : {&headers, &battery})
        for (const auto &id : *named)
            if (!contract.count(id)) missing.insert(id);
    for (const auto &id : contract)
        if (!headers.count(id) && !battery.count(id)) unused.insert(id);
    CHECK_MESSAGE(missing.empty(), "named in abi/ or conformance-runner/ but not defined in docs/contract.md: "
                                       << join(missing));
    CHECK_MESSAGE(unused.empty(), "defined in docs/contract.md but named by neither abi/ nor conformance-runner/: "
                                      << join(unused));
}

TEST_CASE("docs/contract.md defines each rule once, in a bold list item")
{
    // A definition is the line "- **R-X-N**: ..."; a rule cited elsewhere in
    // the page must also be defined, once.
    const auto text = slurp(fs::path(KVBLOB_SOURCE_DIR) / "docs/contract.md");
    const std::regex definition(R"(\n- \*\*(R-[A-Z]+-[0-9]+)\*\*:)");
    std::multiset<std::string> defined;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), definition); it != std::sregex_iterator(); ++it)
        defined.insert((*it)[1].str());
    for (const auto &id : rule_ids_in(text)) CHECK_MESSAGE(defined.count(id) == 1, id << " is defined " << defined.count(id) << " times");
}

TEST_CASE("the loader's rules R-LOAD-1 .. R-LOAD-N are all in docs/contract.md, and cited as a whole range")
{
    const fs::path source(KVBLOB_SOURCE_DIR);
    const auto contract = rule_ids_in(slurp(source / "docs/contract.md"));
    // N: the last loader rule the contract defines; every one before it is there too.
    int last = 0;
    for (const auto &id : contract)
        if (id.rfind("R-LOAD-", 0) == 0) last = std::max(last, std::stoi(id.substr(7)));
    REQUIRE(last >= 12);
    for (int n = 1; n <= last; ++n) CHECK(contract.count("R-LOAD-" + std::to_string(n)));
    // Every document (README.md, docs/ but its dated notes) and the header
    // that repeats the loader's rules cite the range; it must end at the last rule.
    std::vector<fs::path> docs{source / "README.md", source / "abi/include/kvblob/entry.h"};
    for (const auto &entry : fs::recursive_directory_iterator(source / "docs"))
        if (entry.path().extension() == ".md" && fs::relative(entry.path(), source).generic_string().rfind("docs/notes/", 0) != 0)
            docs.push_back(entry.path());
    const std::regex range(R"(R-LOAD-1`? (?:\.\.\.|…|\.\.) `?R-LOAD-([0-9]+))");
    int citations = 0;
    for (const auto &doc : docs) {
        const auto text = slurp(doc);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), range); it != std::sregex_iterator(); ++it) {
            ++citations;
            CHECK_MESSAGE((*it)[1].str() == std::to_string(last), fs::relative(doc, source).string() << " cites " << it->str());
        }
    }
    CHECK_MESSAGE(citations >= 2, "the vendor and operator guides cite the loader's range");
}
