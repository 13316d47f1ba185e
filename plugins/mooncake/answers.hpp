// Every answer of Mooncake store, and the row result it becomes: the one
// place the mapping lives (README.md in this folder has it as a table).
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <string>

namespace kvblob::mooncake {

// Mooncake's ErrorCode values (mooncake-store/include/types.h) the driver
// tells apart.
enum StoreCode : int64_t {
    OK = 0,
    BUFFER_OVERFLOW = -10,
    NO_AVAILABLE_HANDLE = -200,
    INVALID_PARAMS = -600,
    REPLICA_IS_NOT_READY = -703,
    OBJECT_NOT_FOUND = -704,
    OBJECT_ALREADY_EXISTS = -705,
    OBJECT_HAS_LEASE = -706,
    TRANSFER_FAIL = -800,
    CHECKSUM_MISMATCH = -801,
    RPC_FAIL = -900,
    RPC_TIMEOUT = -901,
};

// The code's name ("OBJECT_NOT_FOUND (-704)"), or the bare number.
std::string code_name(int64_t code);

struct Answer {
    kvblob_row_result result;
    std::string message;
    bool access_unprovable = false;  // the transfer may still touch the spans (R-REG-2)
};

// A put's answer. For OBJECT_ALREADY_EXISTS the caller asks batch_is_exist
// and passes complete: READY when it is, NOT_READY while another writer is
// still at it (R-ROW-7, R-ROW-2).
Answer put_answer(int64_t code, bool complete);
// A get's answer: bytes read (>= 0) or a code; row_bytes is what the row's
// span holds.
Answer get_answer(int64_t read, uint64_t row_bytes);
// batch_is_exist's answer: 1, 0, or a code.
Answer probe_answer(int64_t exists);
// remove's answer.
Answer remove_answer(int64_t code);

}  // namespace kvblob::mooncake
