// Numbers the documents state about the battery are the battery's own: the
// count of checks in the README and the vendor guide is what
// `kvblob-conformance --list --json` lists.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "docs/doc_text.hpp"
#include "support/process.hpp"

TEST_CASE("the README and the vendor guide state the battery's number of checks as it is")
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
    for (const char *doc : {"README.md", "docs/vendor-guide.md"}) {
        const auto text = slurp(std::filesystem::path(KVBLOB_SOURCE_DIR) / doc);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), stated); it != std::sregex_iterator(); ++it) {
            ++statements;
            CHECK_MESSAGE(std::stoi((*it)[1].str()) == checks,
                          doc << " says \"" << it->str() << "\"; the battery lists " << checks);
        }
    }
    CHECK_MESSAGE(statements > 0, "no document states the number of checks");
}
