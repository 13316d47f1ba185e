#include "report.hpp"

namespace kvblob::conformance {

namespace {
std::string esc(const std::string &s)
{
    std::string o;
    for (char ch : s)
        o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : ch == '"' ? "&quot;" : std::string(1, ch);
    return o;
}
}  // namespace

void write_junit(std::ostream &x, const std::string &driver_name, const std::vector<Row> &rows, const Tally &t)
{
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvblob-conformance\" tests=\"" << rows.size()
      << "\" failures=\"" << t.failed + t.xpass << "\" skipped=\"" << t.skipped + t.unsupported << "\">\n";
    // What the run left in the store, for CI that keeps an eye on it.
    x << "  <properties><property name=\"left_keys\" value=\"" << t.left_keys
      << "\"/><property name=\"left_bytes\" value=\"" << t.left_bytes
      << "\"/><property name=\"left_unknown_checks\" value=\"" << t.left_unknown.size() << "\"/></properties>\n";
    for (const auto &r : rows) {
        x << "  <testcase classname=\"" << esc(driver_name) << "\" name=\"" << esc(r.check->id) << "\">";
        switch (r.outcome.status) {
        case Status::pass: case Status::xfail: break;
        case Status::skipped: case Status::not_supported:
            x << "<skipped message=\"" << esc(r.outcome.message) << "\"/>";
            break;
        default:
            x << "<failure message=\"" << esc(to_string(r.outcome.status)) << "\">" << esc(r.outcome.message)
              << "</failure>";
        }
        if (r.outcome.left.any()) x << "<system-out>left behind: " << esc(to_text(r.outcome.left)) << "</system-out>";
        x << "</testcase>\n";
    }
    x << "</testsuite>\n";
}

}  // namespace kvblob::conformance
