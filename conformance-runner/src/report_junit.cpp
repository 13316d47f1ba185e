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

// What CI front ends show of a failure: its first line, status first.
std::string first_line(const Outcome &o)
{
    const std::string head = std::string(to_string(o.status)) + (o.message.empty() ? "" : ": ");
    return head + o.message.substr(0, o.message.find('\n'));
}
}  // namespace

void write_junit(std::ostream &x, const std::string &driver_name, const std::vector<Row> &rows, const Tally &t)
{
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvblob-conformance\" tests=\"" << rows.size()
      << "\" failures=\"" << t.failed + t.xpass << "\" errors=\"" << t.blocked + t.starved.size() << "\" skipped=\""
      << t.skipped + t.unsupported + t.not_exercised + t.xfail << "\">\n";
    // What the run left in the store, for CI that keeps an eye on it.
    x << "  <properties><property name=\"left_keys\" value=\"" << t.left_keys
      << "\"/><property name=\"left_bytes\" value=\"" << t.left_bytes
      << "\"/><property name=\"left_unknown_checks\" value=\"" << t.left_unknown.size()
      << "\"/><property name=\"stdout_bytes\" value=\"" << t.stdout_bytes << "\"/></properties>\n";
    for (const auto &r : rows) {
        x << "  <testcase classname=\"" << esc(driver_name) << "\" name=\"" << esc(r.check->id) << "\">";
        const std::string body = esc(r.outcome.message) + (r.rerun.empty() ? "" : "\nrerun: " + esc(r.rerun));
        switch (r.outcome.status) {
        case Status::pass: break;
        // Neither passed nor failed: an expected failure (XFAIL) is a waiver, not a pass.
        case Status::skipped: case Status::not_supported: case Status::not_exercised: case Status::xfail:
            x << "<skipped message=\"" << esc(first_line(r.outcome)) << "\"/>";
            break;
        // Not judged: a behaviour the check reads as evidence is broken.
        case Status::blocked:
            x << "<error message=\"" << esc(first_line(r.outcome)) << "\">" << body << "</error>";
            break;
        // Not judged either: the machine starved the check's wait.
        case Status::starved:
            x << "<error message=\"" << esc(first_line(r.outcome)) << "\" type=\"machine-starved\">" << body
              << "</error>";
            break;
        default:
            x << "<failure message=\"" << esc(first_line(r.outcome)) << "\""
              << (failed_rule(r.outcome).empty() ? "" : " type=\"" + esc(failed_rule(r.outcome)) + "\"") << ">" << body
              << "</failure>";
        }
        if (r.outcome.left.any() || r.outcome.out.any()) {
            x << "<system-out>";
            if (r.outcome.left.any()) x << "left behind: " << esc(to_text(r.outcome.left));
            if (r.outcome.left.any() && r.outcome.out.any()) x << "\n";
            if (r.outcome.out.any()) x << "the driver wrote to stdout: " << esc(stdout_text(r.outcome.out));
            x << "</system-out>";
        }
        x << "</testcase>\n";
    }
    x << "</testsuite>\n";
}

}  // namespace kvblob::conformance
