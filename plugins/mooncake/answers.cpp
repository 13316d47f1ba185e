#include "answers.hpp"

namespace kvblob::mooncake {

std::string code_name(int64_t code)
{
    const char *name = nullptr;
    switch (code) {
#define KVBLOB_MC_CODE(c) \
    case c: name = #c; break;
        KVBLOB_MC_CODE(OK)
        KVBLOB_MC_CODE(INTERNAL_ERROR)
        KVBLOB_MC_CODE(BUFFER_OVERFLOW)
        KVBLOB_MC_CODE(SHARD_INDEX_OUT_OF_RANGE)
        KVBLOB_MC_CODE(SEGMENT_NOT_FOUND)
        KVBLOB_MC_CODE(SEGMENT_ALREADY_EXISTS)
        KVBLOB_MC_CODE(CLIENT_NOT_FOUND)
        KVBLOB_MC_CODE(NO_AVAILABLE_HANDLE)
        KVBLOB_MC_CODE(INVALID_VERSION)
        KVBLOB_MC_CODE(INVALID_KEY)
        KVBLOB_MC_CODE(WRITE_FAIL)
        KVBLOB_MC_CODE(INVALID_PARAMS)
        KVBLOB_MC_CODE(ILLEGAL_CLIENT)
        KVBLOB_MC_CODE(INVALID_WRITE)
        KVBLOB_MC_CODE(INVALID_READ)
        KVBLOB_MC_CODE(INVALID_REPLICA)
        KVBLOB_MC_CODE(REPLICA_IS_NOT_READY)
        KVBLOB_MC_CODE(OBJECT_NOT_FOUND)
        KVBLOB_MC_CODE(OBJECT_ALREADY_EXISTS)
        KVBLOB_MC_CODE(OBJECT_HAS_LEASE)
        KVBLOB_MC_CODE(LEASE_EXPIRED)
        KVBLOB_MC_CODE(OBJECT_HAS_REPLICATION_TASK)
        KVBLOB_MC_CODE(OBJECT_NO_REPLICATION_TASK)
        KVBLOB_MC_CODE(REPLICA_NOT_FOUND)
        KVBLOB_MC_CODE(REPLICA_ALREADY_EXISTS)
        KVBLOB_MC_CODE(REPLICA_IS_GONE)
        KVBLOB_MC_CODE(REPLICA_NOT_IN_LOCAL_MEMORY)
        KVBLOB_MC_CODE(OBJECT_REPLICA_BUSY)
        KVBLOB_MC_CODE(TRANSFER_FAIL)
        KVBLOB_MC_CODE(RPC_FAIL)
        KVBLOB_MC_CODE(RPC_TIMEOUT)
        KVBLOB_MC_CODE(ETCD_OPERATION_ERROR)
        KVBLOB_MC_CODE(ETCD_KEY_NOT_EXIST)
        KVBLOB_MC_CODE(ETCD_TRANSACTION_FAIL)
        KVBLOB_MC_CODE(ETCD_CTX_CANCELLED)
        KVBLOB_MC_CODE(OPLOG_ENTRY_NOT_FOUND)
        KVBLOB_MC_CODE(K8S_LEASE_OPERATION_ERROR)
        KVBLOB_MC_CODE(K8S_LEASE_NOT_FOUND)
        KVBLOB_MC_CODE(UNAVAILABLE_IN_CURRENT_STATUS)
        KVBLOB_MC_CODE(UNAVAILABLE_IN_CURRENT_MODE)
        KVBLOB_MC_CODE(FILE_NOT_FOUND)
        KVBLOB_MC_CODE(FILE_OPEN_FAIL)
        KVBLOB_MC_CODE(FILE_READ_FAIL)
        KVBLOB_MC_CODE(FILE_WRITE_FAIL)
        KVBLOB_MC_CODE(FILE_INVALID_BUFFER)
        KVBLOB_MC_CODE(FILE_LOCK_FAIL)
        KVBLOB_MC_CODE(FILE_INVALID_HANDLE)
        KVBLOB_MC_CODE(BUCKET_NOT_FOUND)
        KVBLOB_MC_CODE(BUCKET_ALREADY_EXISTS)
        KVBLOB_MC_CODE(KEYS_EXCEED_BUCKET_LIMIT)
        KVBLOB_MC_CODE(KEYS_ULTRA_LIMIT)
        KVBLOB_MC_CODE(UNABLE_OFFLOAD)
        KVBLOB_MC_CODE(UNABLE_OFFLOADING)
        KVBLOB_MC_CODE(TASK_NOT_FOUND)
        KVBLOB_MC_CODE(TASK_PENDING_LIMIT_EXCEEDED)
        KVBLOB_MC_CODE(JOB_NOT_FOUND)
        KVBLOB_MC_CODE(SERIALIZE_UNSUPPORTED)
        KVBLOB_MC_CODE(SERIALIZE_FAIL)
        KVBLOB_MC_CODE(DESERIALIZE_FAIL)
        KVBLOB_MC_CODE(PERSISTENT_FAIL)
        KVBLOB_MC_CODE(DFS_NETWORK_TIMEOUT)
        KVBLOB_MC_CODE(DFS_SERVICE_UNAVAILABLE)
        KVBLOB_MC_CODE(DFS_QUOTA_EXCEEDED)
        KVBLOB_MC_CODE(DFS_PERMISSION_DENIED)
        KVBLOB_MC_CODE(DFS_STALE_HANDLE)
        KVBLOB_MC_CODE(DFS_PARTIAL_WRITE)
        KVBLOB_MC_CODE(TENANT_QUOTA_EXCEEDED)
        KVBLOB_MC_CODE(TENANT_NOT_REGISTERED)
        KVBLOB_MC_CODE(TENANT_NOT_EMPTY)
#undef KVBLOB_MC_CODE
    default: return "Mooncake error " + std::to_string(code) + " (not a code of v0.3.12.post1)";
    }
    return std::string(name) + " (" + std::to_string(code) + ")";
}

namespace {

Answer fault(int64_t code, std::string why = {})
{
    return {KVBLOB_ROW_FAULT, code_name(code) + (why.empty() ? "" : ": " + why)};
}

// A code that says the pool, or a policy of the store, has no room for the
// object (R-ROW-2): the caller may retry later or skip the block.
bool is_capacity(int64_t code)
{
    return code == NO_AVAILABLE_HANDLE || code == SEGMENT_NOT_FOUND || code == KEYS_EXCEED_BUCKET_LIMIT ||
           code == KEYS_ULTRA_LIMIT || code == TENANT_QUOTA_EXCEEDED || code == DFS_QUOTA_EXCEEDED;
}

// TRANSFER_FAIL: every transfer of the call reached a terminal state,
// unless the store's completion timeout gave up on one still under way.
Answer transfer_fail(bool settled, const char *direction)
{
    if (settled)
        return {KVBLOB_ROW_FAULT, code_name(TRANSFER_FAIL) + "; every transfer of the call had ended when it answered"};
    return {KVBLOB_ROW_FAULT,
            code_name(TRANSFER_FAIL) + "; the call outlasted the store's completion timeout, so the transfer may still " +
                direction,
            true};
}

}  // namespace

Answer put_answer(int64_t code, bool settled)
{
    if (code >= 0) return {KVBLOB_ROW_FAULT, "batch_put_from answered " + std::to_string(code) + ", not a put result"};
    if (is_capacity(code)) return {KVBLOB_ROW_DECLINED, code_name(code) + ": the pool has no room"};
    switch (code) {
    case OBJECT_ALREADY_EXISTS:  // the driver asks about these rows (existing_answer); never reached
        return {KVBLOB_ROW_NOT_READY, code_name(code) + ": stored by another writer, complete or not"};
    case REPLICA_IS_NOT_READY:
    case OBJECT_HAS_REPLICATION_TASK:
    case OBJECT_REPLICA_BUSY: return {KVBLOB_ROW_NOT_READY, code_name(code)};
    case TRANSFER_FAIL: return transfer_fail(settled, "be reading the span");
    default: return fault(code);
    }
}

Answer get_answer(int64_t read, uint64_t row_bytes, bool settled)
{
    if (read >= 0) {
        if (static_cast<uint64_t>(read) == row_bytes) return {KVBLOB_ROW_READY, {}};
        // R-ROW-5: the head of the span may hold the shorter object's bytes.
        return {KVBLOB_ROW_FAULT, "stored object is " + std::to_string(read) + " bytes; the row's span holds " +
                                      std::to_string(row_bytes)};
    }
    switch (read) {
    case OBJECT_NOT_FOUND: return {KVBLOB_ROW_MISS, {}};  // the one answer that means absent (R-ROW-4)
    case REPLICA_IS_NOT_READY: return {KVBLOB_ROW_NOT_READY, code_name(read)};
    case INVALID_PARAMS:
        // This version answers a span smaller than the object so, before
        // any transfer (R-ROW-5: nothing written).
        return fault(read, "the stored object is larger than the row's span, or the span is not registered");
    case LEASE_EXPIRED:
        // The bytes landed, but the object's lease ran out before they did:
        // the store may have evicted and reused the replica mid-read.
        return fault(read, "the read outlasted the object's lease; the bytes are not trusted (R-ROW-6)");
    case TRANSFER_FAIL: return transfer_fail(settled, "land in the span");
    default: return fault(read);
    }
}

Answer existing_answer(int64_t code)
{
    if (code >= 0 || code == INVALID_PARAMS) return {KVBLOB_ROW_READY, {}};
    if (code == REPLICA_IS_NOT_READY)
        return {KVBLOB_ROW_NOT_READY,
                code_name(code) + ": another writer holds the key and has not committed; nothing was put"};
    if (code == OBJECT_NOT_FOUND)
        return {KVBLOB_ROW_NOT_READY, "the key existed when the put began and was removed before the driver asked "
                                      "whether it was complete; nothing was put (a retry may store it)"};
    return fault(code, "asking whether the key the put found existing is complete; nothing was put");
}

Answer probe_answer(int64_t exists, int64_t size)
{
    if (exists == 1) return {KVBLOB_ROW_READY, {}};
    if (exists > 1) return {KVBLOB_ROW_FAULT, "batch_is_exist answered " + std::to_string(exists) + ", not 1, 0 or a code"};
    if (exists < 0) return exists == REPLICA_IS_NOT_READY ? Answer{KVBLOB_ROW_NOT_READY, code_name(exists)} : fault(exists);
    // 0: absent, or not complete yet; get_size tells which.
    if (size >= 0) return {KVBLOB_ROW_READY, {}};  // completed in between
    if (size == OBJECT_NOT_FOUND) return {KVBLOB_ROW_MISS, {}};
    if (size == REPLICA_IS_NOT_READY) return {KVBLOB_ROW_NOT_READY, code_name(size)};
    return fault(size, "mooncake_store_get_size, asked whether the key is absent or still being written");
}

Answer remove_answer(int64_t code)
{
    switch (code) {
    case OK: return {KVBLOB_ROW_READY, {}};
    case OBJECT_NOT_FOUND: return {KVBLOB_ROW_MISS, {}};
    case REPLICA_IS_NOT_READY:
    case OBJECT_HAS_LEASE:
    case OBJECT_HAS_REPLICATION_TASK:
    case OBJECT_REPLICA_BUSY:
        // The object is still there, being written or read: a later remove
        // may succeed (R-ROW-2).
        return {KVBLOB_ROW_NOT_READY, code_name(code)};
    default:
        if (code > 0) return {KVBLOB_ROW_FAULT, "remove answered " + std::to_string(code) + ", not 0 or a code"};
        return fault(code);
    }
}

Answer whole_call_failure(const char *call, int64_t rc, bool transfers_possible)
{
    std::string message = std::string(call) + " failed as a whole (" + code_name(rc) + "); it wrote no results";
    if (!transfers_possible) return {KVBLOB_ROW_FAULT, std::move(message)};
    // It returns -1 for a bad argument (before any transfer) and for an
    // exception caught inside (possibly mid-transfer); the two look alike.
    return {KVBLOB_ROW_FAULT, message + "; a transfer may have been under way", true};
}

Answer unwritten_slot(const char *call, bool transfers_possible)
{
    return {KVBLOB_ROW_FAULT, std::string(call) + " returned 0 but left this row's result unwritten",
            transfers_possible};
}

}  // namespace kvblob::mooncake
