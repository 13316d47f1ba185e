#include "report.hpp"

#include <cctype>

#include "kvblob/kvblob.h"

#include <string_view>

namespace kvblob::conformance {

void Tally::add(const Row &row)
{
    ran += row.ran ? 1 : 0;
    switch (row.outcome.status) {
    case Status::pass: ++passed; break;
    case Status::skipped: ++skipped; break;
    case Status::not_supported: ++unsupported; break;
    case Status::xfail:
        ++xfail;
        if (row.check->level == Level::must) waived.push_back(row.check->id);
        break;
    case Status::xpass: ++xpass; break;
    case Status::blocked: ++blocked; break;
    case Status::not_exercised: ++not_exercised; break;
    case Status::starved: starved.push_back(row.check->id); break;
    default: ++failed; break;
    }
    const Leftover &left = row.outcome.left;
    if (!left.known) left_unknown.push_back(row.check->id);
    if (left.keys > 0) left_by.push_back(row.check->id);
    left_keys += left.keys;
    left_bytes += left.bytes;
    add_stdout(row.check->id, row.outcome.out);
}

void Tally::add_stdout(const std::string &where, const StdoutSeen &out)
{
    if (!out.any()) return;
    stdout_bytes += out.bytes;
    stdout_by.push_back(where);
}

std::string stdout_last_line(const StdoutSeen &out)
{
    std::string_view text = out.tail;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (const auto nl = text.rfind('\n'); nl != std::string_view::npos) text.remove_prefix(nl + 1);
    constexpr size_t shown = 160;
    std::string line;
    for (char ch : text.substr(0, shown)) line += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    if (text.size() > shown) line += "...";
    return line;
}

std::string stdout_text(const StdoutSeen &out)
{
    return std::to_string(out.bytes) + (out.bytes == 1 ? " byte" : " bytes") +
           ", which this report does not carry (the runner's stdout is its own); its last line: '" +
           stdout_last_line(out) + "'";
}

std::string Tally::verdict() const
{
    const bool none_failed = failed == 0 && xpass == 0 && blocked == 0 && !incomplete;
    if (none_failed && ran == 0) return "NO CHECK RAN";
    if (none_failed && !starved.empty()) {
        std::string out = "UNDECIDED:";
        out += " the machine starved " + std::to_string(starved.size()) +
                          (starved.size() == 1 ? " check" : " checks") + " of the CPU (";
        for (size_t i = 0; i < starved.size(); ++i) out += (i ? ", " : "") + starved[i];
        return out + "); rerun on a machine with CPU to spare";
    }
    if (!conformant()) return "NOT CONFORMANT";
    if (waived.empty()) return "CONFORMANT";
    std::string out = "CONFORMANT EXCEPT WAIVED MUST CHECKS:";
    for (size_t i = 0; i < waived.size(); ++i) out += (i ? ", " : " ") + waived[i];
    return out;
}

std::string limit_text(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "none" : std::to_string(v); }
std::string limit_json(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "null" : std::to_string(v); }

std::string failed_rule(const Outcome &o)
{
    if (o.status != Status::fail && o.status != Status::xfail) return {};
    // "[R-" then capitals, "-", digits, "]": the form CheckFailure writes.
    const std::string &m = o.message;
    if (m.rfind("[R-", 0) != 0) return {};
    size_t i = 3;
    while (i < m.size() && std::isupper(static_cast<unsigned char>(m[i]))) ++i;
    if (i == 3 || i >= m.size() || m[i] != '-') return {};
    const size_t digits = ++i;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i;
    if (i == digits || i >= m.size() || m[i] != ']') return {};
    return m.substr(1, i - 1);
}

void print_row(std::ostream &out, const Row &row)
{
    const Outcome &o = row.outcome;
    if (o.status == Status::skipped) return;
    out << "[" << to_string(o.status) << "] " << row.check->id;
    if (!o.message.empty()) out << ": " << o.message;
    out << "\n";
    if (o.left.any()) out << "    left behind: " << to_text(o.left) << "\n";
    if (o.out.any()) out << "    the driver wrote to stdout: " << stdout_text(o.out) << "\n";
    if (!row.rerun.empty()) out << "    rerun: " << row.rerun << "\n";
    out << std::flush;
}

void print_summary(std::ostream &out, const Tally &t, const std::string &key_prefix)
{
    // Before the counts: they and the verdict stay the last lines.
    out << "left in the store: ";
    if (t.left_by.empty() && t.left_unknown.empty()) out << "nothing (each check removed what it wrote)";
    if (!t.left_by.empty())
        out << t.left_keys << (t.left_keys == 1 ? " key, " : " keys, ") << t.left_bytes << " bytes by "
            << t.left_by.size() << (t.left_by.size() == 1 ? " check" : " checks") << " (see their 'left behind' lines)";
    if (!t.left_unknown.empty())
        out << (t.left_by.empty() ? "" : "; ") << "unknown after " << t.left_unknown.size()
            << (t.left_unknown.size() == 1 ? " check" : " checks") << " that did not finish";
    if (!key_prefix.empty() && (!t.left_by.empty() || !t.left_unknown.empty()))
        out << "; every key of this run begins with '" << key_prefix << "'";
    out << "\n";
    // Said before the counts too: a driver's stdout is no report's.
    if (t.stdout_bytes > 0) {
        out << "the driver wrote to stdout: " << t.stdout_bytes << (t.stdout_bytes == 1 ? " byte" : " bytes")
            << " in " << t.stdout_by.size() << (t.stdout_by.size() == 1 ? " process" : " processes") << " (";
        constexpr size_t named = 5;
        for (size_t i = 0; i < t.stdout_by.size() && i < named; ++i) out << (i ? ", " : "") << t.stdout_by[i];
        if (t.stdout_by.size() > named) out << " and " << t.stdout_by.size() - named << " more";
        out << "); a driver reports through its log service, and an engine's stdout is the engine's\n";
    }
    out << t.passed << " passed, " << t.failed << " failed, " << t.skipped << " skipped, " << t.unsupported
        << " not supported, " << t.not_exercised << " not exercised by this runner, " << t.xfail << " xfail, " << t.xpass << " xpass, " << t.blocked << " blocked";
    // Said only where it happened: the counts line stays as scripts read it.
    if (!t.starved.empty()) out << ", " << t.starved.size() << " starved (TIMEOUT, machine starved)";
    out << "\n" << t.verdict() << "\n";
    if (!t.shard.empty())
        out << "shard " << t.shard << ": " << t.other_shards << (t.other_shards == 1 ? " check" : " checks")
            << " left to the other shards; the verdict is this shard's\n";
    if (t.strict && t.unselected > 0)
        out << "--strict: " << t.unselected << (t.unselected == 1 ? " check was" : " checks were")
            << " left out by --filter/--exclude; a strict run judges every applicable check\n";
    if (t.incomplete)
        out << "run incomplete: " << (t.stopped.empty() ? "interrupted before every check ran" : t.stopped) << "; "
            << t.not_run << (t.not_run == 1 ? " check" : " checks") << " not run\n";
}

}  // namespace kvblob::conformance
