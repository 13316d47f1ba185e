// Running kvblob-conformance from a test, and the files its reports go to:
// named per process, so two suites running at once (a developer's and CI's
// on one machine) never read each other's reports.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "docs/doc_text.hpp"
#include "support/process.hpp"

inline CommandResult runner(const std::string &args)
{
    return run_command(std::string(KVBLOB_CONFORMANCE_BIN) + " " + args);
}

inline std::string temp_path(const std::string &name)
{
    return (std::filesystem::temp_directory_path() / ("kvblob-test-" + std::to_string(::getpid()) + "-" + name)).string();
}
