// The run's outcome and the formats it is reported in: the text on stdout
// (report_text.cpp), JSON lines (report_json.cpp) and JUnit XML
// (report_junit.cpp). Each takes options already redacted (probe.hpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "check.hpp"
#include "isolation.hpp"
#include "probe.hpp"

namespace kvblob::conformance {

struct Row {
    const Check *check;
    Outcome outcome;
    bool ran = false;  // the check's body was run (not filtered out, not unsupported, not cut off)
    std::string rerun;  // the command that reruns the check alone; empty where none is called for
};

// Counts of a run; every row counts in exactly one of them.
struct Tally {
    int passed = 0, failed = 0, skipped = 0, unsupported = 0, xfail = 0, xpass = 0;
    // Checks that could not judge their rule: a behaviour they read as
    // evidence is broken (Blocked). They certify nothing, so the run is not
    // conformant while any is.
    int blocked = 0;
    // Checks this runner could not exercise (its build, its machine): never
    // the driver's doing, so they count apart and fail nothing.
    int not_exercised = 0;
    // Checks whose wait ran out while the machine starved their process of
    // the CPU (TIMEOUT, machine starved): undecided, neither failed nor
    // passed, so the run is not conformant either; their ids.
    std::vector<std::string> starved;
    // --strict: the run judges the driver whole. A waived failure (XFAIL)
    // fails, and so does an applicable check left out by --filter/--exclude.
    bool strict = false;
    int unselected = 0;  // checks skipped by --filter/--exclude
    // --shard K/N: "K/N", and the checks left to the other shards. Those
    // are no gap in a strict run: the N shards together run them.
    std::string shard;
    int other_shards = 0;
    std::vector<std::string> waived;  // MUST checks that failed as expected (XFAIL)
    int ran = 0;  // rows whose check was run: a run of none certifies nothing
    // Why the run ended before every check ran (a stop request, the run's
    // time, a driver that stopped answering); empty when it did not.
    std::string stopped;
    int not_run = 0;  // checks left unrun by that
    bool incomplete = false;
    // What the checks left in the store (leftover.hpp): the sums, the checks
    // that left something, the checks after which nobody could tell.
    uint64_t left_keys = 0, left_bytes = 0;
    std::vector<std::string> left_by, left_unknown;
    // What the driver wrote to stdout (isolation.hpp, StdoutSeen): the sum,
    // and where ("probe" for the probe's process, else check ids).
    uint64_t stdout_bytes = 0;
    std::vector<std::string> stdout_by;
    void add_stdout(const std::string &where, const StdoutSeen &out);

    void add(const Row &row);
    bool conformant() const
    {
        return failed == 0 && xpass == 0 && blocked == 0 && starved.empty() && !incomplete && ran > 0 &&
               !(strict && unselected > 0);
    }
    // "CONFORMANT", "NOT CONFORMANT", "NO CHECK RAN" (a selection that runs
    // nothing, or a driver that supports nothing, certifies nothing),
    // "UNDECIDED: ..." (nothing failed, but the machine starved checks that
    // then could not decide; exit 6), or
    // "CONFORMANT EXCEPT WAIVED MUST CHECKS: a, b" (CI may stay green on
    // waivers, the claim of full conformance may not).
    std::string verdict() const;
};

// What the run was: shown in the JSON header.
struct RunInfo {
    Probe probe;
    std::string sha256, prefix;
    uint64_t seed = 0;
    Options options;                    // redacted
    std::vector<std::string> command;   // redacted
};

// What the driver wrote to stdout, as a report says it: "N bytes, which this
// report does not carry; its last line: '...'" (that line cut short and its
// unprintable bytes shown as '?').
std::string stdout_text(const StdoutSeen &out);
// Its last line alone, as stdout_text shows it.
std::string stdout_last_line(const StdoutSeen &out);

// "none" in text, null in JSON: KVBLOB_NO_LIMIT written one way in every
// tool (kvblob-info does the same).
std::string limit_text(uint64_t v);
// The rule a failure names (its message's leading "[R-AREA-N]", as every
// check and the runner write one), where the check's list of rules only
// says what it covers; empty for an outcome that names none.
std::string failed_rule(const Outcome &o);
std::string limit_json(uint64_t v);

void json_header(std::ostream &out, const RunInfo &run);
void json_row(std::ostream &out, const Row &row);
void json_summary(std::ostream &out, const Tally &tally);

void write_junit(std::ostream &out, const std::string &driver_name, const std::vector<Row> &rows, const Tally &tally);

// One line per check that ran (and the command that reruns a failure).
void print_row(std::ostream &out, const Row &row);
// key_prefix: what every key of the run begins with (named when keys stayed).
void print_summary(std::ostream &out, const Tally &tally, const std::string &key_prefix = {});

}  // namespace kvblob::conformance
