// Whether the tools see a CUDA device: the battery's device checks and
// kvblob-bench's --memory device ask before they allocate device memory.
// The tools' own answer, written apart from the drivers' device copies
// (plugins/support/src/device_copy.cpp): the checker shares no code with
// what it checks, so a fault there cannot hide itself by agreeing with the
// battery. Built with the CUDA runtime when the toolkit was found at
// configure time (KVBLOB_HAVE_CUDA); without it no device is ever present.
#pragma once

#include <string>

namespace kvblob::tools {

// Why this process sees no CUDA device ("no CUDA device (...)"); empty when
// it sees at least one.
std::string cuda_unavailable_reason();

}  // namespace kvblob::tools
