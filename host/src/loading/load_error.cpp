#include "kvblob/host/load_error.hpp"

#include <sstream>

#include "kvblob/host/printable.hpp"

namespace kvblob {

const char *to_string(LoadStage stage)
{
    switch (stage) {
    case LoadStage::open: return "open";
    case LoadStage::entry: return "entry";
    case LoadStage::negotiate: return "negotiate";
    case LoadStage::validate: return "validate";
    case LoadStage::init: return "init";
    }
    return "unknown";
}

namespace {

std::string describe(const std::string &file, LoadStage stage,
                     const std::vector<LoadProblem> &problems, const std::string &dlerror_text)
{
    std::ostringstream out;
    // Escaped (printable.hpp): a file name, a driver's message or a config
    // file's text may hold escape sequences meant for the reader's terminal.
    out << "kvblob: refused plugin '" << printable(file) << "' at stage " << to_string(stage) << ":";
    for (const auto &p : problems) out << "\n  [" << printable(p.rule) << "] " << printable(p.reason);
    if (!dlerror_text.empty()) out << "\n  dlerror: " << printable(dlerror_text);
    return out.str();
}

}  // namespace

LoadError::LoadError(std::string file, LoadStage stage, std::vector<LoadProblem> problems,
                     std::string dlerror_text)
    : std::runtime_error(describe(file, stage, problems, dlerror_text)),
      file_(std::move(file)),
      stage_(stage),
      problems_(std::move(problems)),
      dlerror_(std::move(dlerror_text))
{
    if (problems_.empty()) problems_.push_back({"R-LOAD-1", "unspecified"});
}

}  // namespace kvblob
