// Numbers and claims the documents state about the tools are the tools' own:
// the count of checks every document gives is what
// `kvblob-conformance --list --json` lists; the verdict lines the vendor
// guide lists are the ones the runner can print; an option a driver refuses
// is reported where the guide says.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "docs/doc_text.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;

namespace {

// README.md and every page under docs/ but the dated notes (history, which
// states what was true then), as paths relative to the source tree.
std::vector<std::string> current_documents()
{
    const fs::path source(KVBLOB_SOURCE_DIR);
    std::vector<std::string> docs{"README.md"};
    for (const auto &entry : fs::recursive_directory_iterator(source / "docs")) {
        const auto relative = fs::relative(entry.path(), source).generic_string();
        if (entry.is_regular_file() && entry.path().extension() == ".md" && relative.rfind("docs/notes/", 0) != 0)
            docs.push_back(relative);
    }
    return docs;
}

// The text of a "## " section whose heading starts with title.
std::string section_of(const std::string &text, const std::string &title)
{
    const auto start = text.find("\n## " + title);
    if (start == std::string::npos) return {};
    const auto end = text.find("\n## ", start + 1);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

TEST_CASE("every document states the battery's number of checks as it is")
{
    auto list = run_command(std::string(KVBLOB_CONFORMANCE_BIN) + " --list --json");
    REQUIRE(list.exit_code == 0);
    int checks = 0;
    std::istringstream lines(list.output);
    for (std::string line; std::getline(lines, line);)
        if (line.find("\"id\":") != std::string::npos) ++checks;
    REQUIRE(checks > 0);

    // "48 checks", "48 conformance checks": a count of the battery's checks.
    // ("1 checks failed", an exit code's meaning, is not a count.)
    const std::regex stated(R"((\d+) (?:conformance )?checks\b(?! (?:failed|FAIL)))");
    int statements = 0;
    const auto docs = current_documents();
    REQUIRE(docs.size() > 5);
    for (const auto &doc : docs) {
        const auto text = slurp(fs::path(KVBLOB_SOURCE_DIR) / doc);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), stated); it != std::sregex_iterator(); ++it) {
            ++statements;
            CHECK_MESSAGE(std::stoi((*it)[1].str()) == checks,
                          doc << " says \"" << it->str() << "\"; the battery lists " << checks);
        }
    }
    CHECK_MESSAGE(statements > 0, "no document states the number of checks");
    // The vendor guide states it where it says how the battery earns trust.
    CHECK(std::regex_search(section_of(slurp(fs::path(KVBLOB_SOURCE_DIR) / "docs/vendor-guide.md"), "6. "), stated));
}

TEST_CASE("the vendor guide lists every verdict line the runner prints")
{
    // The runner's verdicts are the string literals Tally::verdict returns.
    const auto code = slurp(fs::path(KVBLOB_SOURCE_DIR) / "conformance-runner/src/report_text.cpp");
    const auto start = code.find("std::string Tally::verdict() const");
    REQUIRE(start != std::string::npos);
    const auto body = code.substr(start, code.find("\n}\n", start) - start);
    const std::regex literal(R"re("([A-Z][A-Z ]+[A-Z]:?)")re");
    std::vector<std::string> verdicts;
    for (auto it = std::sregex_iterator(body.begin(), body.end(), literal); it != std::sregex_iterator(); ++it)
        verdicts.push_back((*it)[1].str());
    REQUIRE(verdicts.size() >= 4);
    const auto report = section_of(slurp(fs::path(KVBLOB_SOURCE_DIR) / "docs/vendor-guide.md"), "3. Read the report");
    REQUIRE(!report.empty());
    for (const auto &verdict : verdicts)
        CHECK_MESSAGE(report.find("`" + verdict) != std::string::npos,
                      "the runner can end a run with \"" << verdict << "\"; docs/vendor-guide.md section 3 does not list it");
}

TEST_CASE("an option a driver refuses is reported as the vendor guide says: [R-OPN-1] at stage init")
{
    const auto refused = run_command(std::string(KVBLOB_INFO_BIN) + " memory --option colour=blue");
    CHECK(refused.exit_code == 3);
    CHECK_MESSAGE(refused.output.find("at stage init") != std::string::npos, refused.output);
    CHECK_MESSAGE(refused.output.find("[R-OPN-1]") != std::string::npos, refused.output);
    const auto guide = section_of(slurp(fs::path(KVBLOB_SOURCE_DIR) / "docs/vendor-guide.md"), "1. ");
    CHECK(guide.find("reported at stage `init` as `[R-OPN-1]`") != std::string::npos);
}
