// Every answer of Mooncake store, and the row result it becomes: the one
// place the mapping lives (README.md in this folder has it as a table, with
// the reasoning for each code).
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <string>

namespace kvblob::mooncake {

// Every ErrorCode of Mooncake v0.3.12.post1 (mooncake-store/include/types.h),
// the version whose C API this driver speaks (store_api.hpp checks it).
enum StoreCode : int64_t {
    OK = 0,
    INTERNAL_ERROR = -1,
    BUFFER_OVERFLOW = -10,
    SHARD_INDEX_OUT_OF_RANGE = -100,
    SEGMENT_NOT_FOUND = -101,
    SEGMENT_ALREADY_EXISTS = -102,
    CLIENT_NOT_FOUND = -103,
    NO_AVAILABLE_HANDLE = -200,
    INVALID_VERSION = -300,
    INVALID_KEY = -400,
    WRITE_FAIL = -500,
    INVALID_PARAMS = -600,
    ILLEGAL_CLIENT = -601,
    INVALID_WRITE = -700,
    INVALID_READ = -701,
    INVALID_REPLICA = -702,
    REPLICA_IS_NOT_READY = -703,
    OBJECT_NOT_FOUND = -704,
    OBJECT_ALREADY_EXISTS = -705,
    OBJECT_HAS_LEASE = -706,
    LEASE_EXPIRED = -707,
    OBJECT_HAS_REPLICATION_TASK = -708,
    OBJECT_NO_REPLICATION_TASK = -709,
    REPLICA_NOT_FOUND = -710,
    REPLICA_ALREADY_EXISTS = -711,
    REPLICA_IS_GONE = -712,
    REPLICA_NOT_IN_LOCAL_MEMORY = -713,
    OBJECT_REPLICA_BUSY = -714,
    TRANSFER_FAIL = -800,
    RPC_FAIL = -900,
    RPC_TIMEOUT = -901,
    ETCD_OPERATION_ERROR = -1000,
    ETCD_KEY_NOT_EXIST = -1001,
    ETCD_TRANSACTION_FAIL = -1002,
    ETCD_CTX_CANCELLED = -1003,
    OPLOG_ENTRY_NOT_FOUND = -1004,
    K8S_LEASE_OPERATION_ERROR = -1005,
    K8S_LEASE_NOT_FOUND = -1006,
    UNAVAILABLE_IN_CURRENT_STATUS = -1010,
    UNAVAILABLE_IN_CURRENT_MODE = -1011,
    FILE_NOT_FOUND = -1100,
    FILE_OPEN_FAIL = -1101,
    FILE_READ_FAIL = -1102,
    FILE_WRITE_FAIL = -1103,
    FILE_INVALID_BUFFER = -1104,
    FILE_LOCK_FAIL = -1105,
    FILE_INVALID_HANDLE = -1106,
    BUCKET_NOT_FOUND = -1200,
    BUCKET_ALREADY_EXISTS = -1201,
    KEYS_EXCEED_BUCKET_LIMIT = -1202,
    KEYS_ULTRA_LIMIT = -1203,
    UNABLE_OFFLOAD = -1300,
    UNABLE_OFFLOADING = -1301,
    TASK_NOT_FOUND = -1400,
    TASK_PENDING_LIMIT_EXCEEDED = -1401,
    JOB_NOT_FOUND = -1402,
    SERIALIZE_UNSUPPORTED = -1500,
    SERIALIZE_FAIL = -1501,
    DESERIALIZE_FAIL = -1502,
    PERSISTENT_FAIL = -1503,
    DFS_NETWORK_TIMEOUT = -1600,
    DFS_SERVICE_UNAVAILABLE = -1601,
    DFS_QUOTA_EXCEEDED = -1602,
    DFS_PERMISSION_DENIED = -1603,
    DFS_STALE_HANDLE = -1604,
    DFS_PARTIAL_WRITE = -1605,
    TENANT_QUOTA_EXCEEDED = -1700,
    TENANT_NOT_REGISTERED = -1701,
    TENANT_NOT_EMPTY = -1702,
};

// Written into every results slot before a batch call: no code of this
// version and no byte count, so a slot the library left unwritten is seen as
// such and never read as OK (0).
inline constexpr int kUnwritten = INT_MIN;

// The store waits for every transfer of a batch to reach a terminal state
// before it answers, except when its own completion timeout (60 s from
// submission, mooncake-store/src/transfer_task.cpp) gives up on transfers
// still under way. A call that returned well within that bound cannot have
// taken the give-up path, so its failed transfers are over.
inline constexpr std::chrono::seconds kTransferGiveUp{30};

// The code's name ("OBJECT_NOT_FOUND (-704)"), or the bare number.
std::string code_name(int64_t code);

struct Answer {
    kvblob_row_result result;
    std::string message;
    bool access_unprovable = false;  // the transfer may still touch the spans (R-REG-2)
};

// A put's answer other than 0. settled: the call returned within
// kTransferGiveUp, so a failed transfer is over (see above).
Answer put_answer(int64_t code, bool settled);
// A put's answer for a key the put found existing (OBJECT_ALREADY_EXISTS,
// stored nothing), from what the driver asked next: batch_get_into with an
// empty span (no buffer, 0 bytes), which moves nothing and leases nothing
// absent or incomplete. A byte count, or INVALID_PARAMS (an object larger
// than the empty span): READY, the object is stored whole (R-ROW-7);
// REPLICA_IS_NOT_READY: NOT_READY, another writer holds it uncommitted
// (R-ROW-2); OBJECT_NOT_FOUND: NOT_READY, removed since the put found it
// (a retry may store it); any other code FAULT.
Answer existing_answer(int64_t code);
// A get's answer: bytes read (>= 0) or a code; row_bytes is what the row's
// span holds.
Answer get_answer(int64_t read, uint64_t row_bytes, bool settled);
// A probe's answer from batch_is_exist (1, 0, or a code) and, where that
// is 0, get_size's (which tells an absent key, OBJECT_NOT_FOUND, from one
// still being written, REPLICA_IS_NOT_READY: is_exist answers 0 for both).
Answer probe_answer(int64_t exists, int64_t size);
// remove's answer.
Answer remove_answer(int64_t code);
// A batch call that failed as a whole (returned rc != 0, its results array
// not written). transfers_possible: the call moves bytes (put, get), so a
// transfer may have been under way when it gave up.
Answer whole_call_failure(const char *call, int64_t rc, bool transfers_possible);
// One slot the library left unwritten although the call returned 0.
Answer unwritten_slot(const char *call, bool transfers_possible);

}  // namespace kvblob::mooncake
