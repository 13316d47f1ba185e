// What kvblob/host/types.hpp and driver.hpp declare beside the classes:
// the kind names, CallError's text, and the default log sink.
#include "kvblob/host/driver.hpp"

#include <cstdio>
#include <utility>

namespace kvblob {

namespace {

const char *level_name(kvblob_log_level level)
{
    switch (level) {
    case KVBLOB_LOG_DEBUG: return "debug";
    case KVBLOB_LOG_INFO: return "info";
    case KVBLOB_LOG_WARN: return "warning";
    case KVBLOB_LOG_ERROR: return "error";
    case KVBLOB_LOG_MISBEHAVING: return "driver misbehaving";
    default: return "log";
    }
}

}  // namespace

LogSink stderr_log_sink(const std::string &driver_name)
{
    return [driver_name](kvblob_log_level level, const std::string &message) {
        if (level >= KVBLOB_LOG_WARN)
            std::fprintf(stderr, "kvblob[%s] %s: %s\n", driver_name.c_str(), level_name(level),
                         message.c_str());
    };
}

const char *to_string(OpKind kind)
{
    switch (kind) {
    case OpKind::put: return "put";
    case OpKind::get: return "get";
    case OpKind::probe: return "probe";
    case OpKind::remove: return "remove";
    }
    return "?";
}

CallError::CallError(kvblob_status status, std::string rule, const std::string &message, bool refused)
    : std::runtime_error("[" + rule + "] " + message + " (" + kvblob_status_name(status) + ")"),
      status_(status),
      rule_(std::move(rule)),
      refused_(refused)
{
}

}  // namespace kvblob
