#include "report.hpp"

#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/json.hpp"
#include "kvblob/host/version.hpp"

namespace kvblob::conformance {

namespace {

// What a check left: its counts, or null counts when nobody could tell.
std::string left_json(const Leftover &left)
{
    return std::string("{\"keys\":") + (left.known ? std::to_string(left.keys) : "null") +
           ",\"bytes\":" + (left.known ? std::to_string(left.bytes) : "null") + ",\"why\":" + json_quote(left.why) +
           "}";
}

}  // namespace

void json_header(std::ostream &out, const RunInfo &run)
{
    const Probe &p = run.probe;
    const kvblob_caps_t &caps = p.caps;
    std::vector<std::string> option_words;
    for (const auto &[k, v] : run.options) option_words.push_back(k + "=" + v);
    out << "{\"runner\":" << json_quote(release_version()) << ",\"abi\":" << json_quote(abi_version_text(KVBLOB_ABI_VERSION))
        << ",\"negotiated_abi\":" << json_quote(abi_version_text(p.abi_version))
        << ",\"contract\":" << KVBLOB_CONTRACT_VERSION << ",\"driver\":" << json_quote(p.path)
        << ",\"sha256\":" << json_quote(run.sha256) << ",\"name\":" << json_quote(p.name)
        << ",\"version\":" << json_quote(p.version)
        << ",\"capabilities\":" << json_string_array(capability_names(caps.flags))
        << ",\"limits\":{\"max_rows_per_op\":" << limit_json(caps.max_rows_per_op)
        << ",\"max_spans_per_row\":" << limit_json(caps.max_spans_per_row)
        << ",\"max_key_bytes\":" << limit_json(caps.max_key_bytes)
        << ",\"max_object_bytes\":" << limit_json(caps.max_object_bytes)
        << ",\"max_ops_in_flight\":" << limit_json(caps.max_ops_in_flight) << "}"
        << ",\"access_end_bound_ns\":"
        << ((caps.flags & KVBLOB_CAP_ACCESS_BOUND) ? std::to_string(caps.access_end_bound_ns) : "null")
        << ",\"hooks\":" << json_string_array({p.offer.hooks.begin(), p.offer.hooks.end()})
        << ",\"options\":" << json_string_array(option_words) << ",\"seed\":" << run.seed
        << ",\"prefix\":" << json_quote(run.prefix) << ",\"command\":" << json_string_array(run.command) << "}\n"
        << std::flush;
}

void json_row(std::ostream &out, const Row &row)
{
    out << "{\"id\":" << json_quote(row.check->id) << ",\"rules\":" << json_string_array(row.check->rules)
        << ",\"status\":" << json_quote(to_string(row.outcome.status)) << ",\"message\":"
        << json_quote(row.outcome.message) << ",\"left\":" << left_json(row.outcome.left)
        << ",\"stdout\":"
        << (row.outcome.out.any() ? "{\"bytes\":" + std::to_string(row.outcome.out.bytes) +
                                        ",\"last_line\":" + json_quote(stdout_last_line(row.outcome.out)) + "}"
                                  : std::string("null"))
        << ",\"metrics\":" << check_metrics_json(row.outcome.metrics) << ",\"failed_rule\":"
        << (failed_rule(row.outcome).empty() ? "null" : json_quote(failed_rule(row.outcome)))
        << ",\"rerun\":" << (row.rerun.empty() ? "null" : json_quote(row.rerun)) << "}\n"
        << std::flush;
}

void json_summary(std::ostream &out, const Tally &t)
{
    out << "{\"summary\":{\"verdict\":" << json_quote(t.verdict()) << ",\"conformant\":"
        << (t.conformant() ? "true" : "false") << ",\"complete\":" << (t.incomplete ? "false" : "true")
        << ",\"stopped\":" << (t.stopped.empty() ? "null" : json_quote(t.stopped)) << ",\"ran\":" << t.ran
        << ",\"not_run\":" << t.not_run
        << ",\"passed\":" << t.passed << ",\"failed\":" << t.failed << ",\"skipped\":" << t.skipped
        << ",\"not_supported\":" << t.unsupported << ",\"xfail\":" << t.xfail << ",\"xpass\":" << t.xpass << ",\"blocked\":" << t.blocked << ",\"not_exercised\":" << t.not_exercised
        << ",\"starved\":" << json_string_array(t.starved)
        << ",\"strict\":" << (t.strict ? "true" : "false") << ",\"unselected\":" << t.unselected
        << ",\"shard\":" << (t.shard.empty() ? "null" : json_quote(t.shard)) << ",\"other_shards\":" << t.other_shards
        << ",\"waived\":" << json_string_array(t.waived) << ",\"stdout\":{\"bytes\":" << t.stdout_bytes
        << ",\"by\":" << json_string_array(t.stdout_by) << "},\"left\":{\"keys\":" << t.left_keys
        << ",\"bytes\":" << t.left_bytes << ",\"by\":" << json_string_array(t.left_by)
        << ",\"unknown\":" << json_string_array(t.left_unknown) << "}}}\n"
        << std::flush;
}

}  // namespace kvblob::conformance
