// The loader's refusal: which file, which stage, which rule, and why.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kvblob {

// The pipeline a plugin passes through before an engine may use it
// (abi-guide rule 11). A refusal names the stage it happened in.
enum class LoadStage { open, entry, negotiate, validate, init };

const char *to_string(LoadStage stage);

// One reason a plugin was refused, citing a rule id (R-LOAD-n from
// abi/include/kvblob/entry.h, or a contract.md rule).
struct LoadProblem {
    std::string rule;
    std::string reason;
};

// Thrown by the loader. Lists every problem found in the failing stage, not
// only the first, so a vendor fixes them in one round trip.
class LoadError : public std::runtime_error {
public:
    LoadError(std::string file, LoadStage stage, std::vector<LoadProblem> problems,
              std::string dlerror_text = {});

    const std::string &file() const noexcept { return file_; }
    LoadStage stage() const noexcept { return stage_; }
    const std::vector<LoadProblem> &problems() const noexcept { return problems_; }
    // The dynamic linker's own words (stage open or entry); empty otherwise.
    const std::string &dlerror_text() const noexcept { return dlerror_; }
    // The rule of the first problem, for callers that want one id.
    const std::string &rule() const noexcept { return problems_.front().rule; }

private:
    std::string file_;
    LoadStage stage_;
    std::vector<LoadProblem> problems_;
    std::string dlerror_;
};

}  // namespace kvblob
