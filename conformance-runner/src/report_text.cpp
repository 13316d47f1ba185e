#include "report.hpp"

#include "kvblob/kvblob.h"

namespace kvblob::conformance {

void Tally::add(const Row &row)
{
    switch (row.outcome.status) {
    case Status::pass: ++passed; break;
    case Status::skipped: ++skipped; break;
    case Status::not_supported: ++unsupported; break;
    case Status::xfail:
        ++xfail;
        if (row.check->level == Level::must) waived.push_back(row.check->id);
        break;
    case Status::xpass: ++xpass; break;
    default: ++failed; break;
    }
}

std::string Tally::verdict() const
{
    if (!conformant()) return "NOT CONFORMANT";
    if (waived.empty()) return "CONFORMANT";
    std::string out = "CONFORMANT EXCEPT WAIVED MUST CHECKS:";
    for (size_t i = 0; i < waived.size(); ++i) out += (i ? ", " : " ") + waived[i];
    return out;
}

std::string limit_text(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "none" : std::to_string(v); }
std::string limit_json(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "null" : std::to_string(v); }

void print_row(std::ostream &out, const Row &row, const std::string &rerun_prefix)
{
    const Outcome &o = row.outcome;
    if (o.status == Status::skipped) return;
    out << "[" << to_string(o.status) << "] " << row.check->id;
    if (!o.message.empty()) out << ": " << o.message;
    out << "\n";
    if (o.status == Status::fail || o.status == Status::crash || o.status == Status::timeout)
        out << "    rerun: " << rerun_prefix << " --filter '" << row.check->id << "'\n";
    out << std::flush;
}

void print_summary(std::ostream &out, const Tally &t)
{
    out << t.passed << " passed, " << t.failed << " failed, " << t.skipped << " skipped, " << t.unsupported
        << " not supported, " << t.xfail << " xfail, " << t.xpass << " xpass\n"
        << t.verdict() << "\n";
    if (t.incomplete) out << "run incomplete: interrupted before every check ran\n";
}

}  // namespace kvblob::conformance
