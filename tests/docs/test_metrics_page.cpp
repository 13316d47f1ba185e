// docs/metrics.md's table of metrics is the code's own list
// (kvblob::metric_families()): every family, its type and its labels, and
// nothing else; and every family is on the page prometheus_text() writes.
#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <sstream>

#include "docs/doc_text.hpp"
#include "kvblob/host/metrics.hpp"

TEST_CASE("metrics page lists every family")
{
    const std::string page = slurp(std::string(KVBLOB_SOURCE_DIR) + "/docs/metrics.md");
    // | `name` | type | labels | meaning |
    const std::regex row(R"(\n\| `(kvblob_[a-z_]+)` \| ([a-z]+) \|([^|]*)\| [^|\n]+ \|)");
    std::map<std::string, std::pair<std::string, std::string>> documented;
    for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator(); ++it) {
        std::string labels = (*it)[3].str();
        labels = std::regex_replace(labels, std::regex(R"(\(none[^)]*\))"), "");
        labels = std::regex_replace(labels, std::regex(R"(\s+)"), "");
        CHECK_MESSAGE(documented.emplace((*it)[1].str(), std::make_pair((*it)[2].str(), labels)).second,
                      (*it)[1].str() << " is listed twice");
    }
    const auto &families = kvblob::metric_families();
    CHECK(documented.size() == families.size());
    const std::string exposition = kvblob::prometheus_text({kvblob::MetricsSnapshot{}});
    for (const auto &f : families) {
        INFO("family " << f.name);
        REQUIRE(documented.count(f.name) == 1);
        CHECK(documented[f.name].first == f.type);
        CHECK(documented[f.name].second == f.labels);
        CHECK(exposition.find(std::string("# TYPE ") + f.name + " " + f.type + "\n") != std::string::npos);
    }
}
