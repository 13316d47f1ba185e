// The memory-kind check at registration (R-ADM-8: "memory kind is verified
// at registration"): a DEVICE region must be CUDA device memory on the
// ordinal it names; a HOST region must not be device memory (pinned host
// memory is HOST). Asked of the CUDA driver API, libcuda.so.1, loaded with
// dlopen on first use, so the host library has no link-time CUDA
// dependency. Internal to the host library.
#pragma once

#include <kvblob/kvblob.h>

#include <string>

namespace kvblob {

// Why desc's memory is not of the kind it claims (a sentence naming the
// address, the kind and the ordinal); empty when it is, or when it cannot be
// told: a HOST region on a machine without a CUDA driver is host memory.
std::string memory_kind_problem(const kvblob_region_desc_t &desc);

}  // namespace kvblob
