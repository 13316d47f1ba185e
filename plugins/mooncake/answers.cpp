#include "answers.hpp"

namespace kvblob::mooncake {

std::string code_name(int64_t code)
{
    const char *name = nullptr;
    switch (code) {
    case OK: name = "OK"; break;
    case BUFFER_OVERFLOW: name = "BUFFER_OVERFLOW"; break;
    case NO_AVAILABLE_HANDLE: name = "NO_AVAILABLE_HANDLE"; break;
    case INVALID_PARAMS: name = "INVALID_PARAMS"; break;
    case REPLICA_IS_NOT_READY: name = "REPLICA_IS_NOT_READY"; break;
    case OBJECT_NOT_FOUND: name = "OBJECT_NOT_FOUND"; break;
    case OBJECT_ALREADY_EXISTS: name = "OBJECT_ALREADY_EXISTS"; break;
    case OBJECT_HAS_LEASE: name = "OBJECT_HAS_LEASE"; break;
    case TRANSFER_FAIL: name = "TRANSFER_FAIL"; break;
    case CHECKSUM_MISMATCH: name = "CHECKSUM_MISMATCH"; break;
    case RPC_FAIL: name = "RPC_FAIL"; break;
    case RPC_TIMEOUT: name = "RPC_TIMEOUT"; break;
    default: return "Mooncake error " + std::to_string(code);
    }
    return std::string(name) + " (" + std::to_string(code) + ")";
}

namespace {

Answer fault(int64_t code) { return {KVBLOB_ROW_FAULT, code_name(code)}; }

}  // namespace

Answer put_answer(int64_t code, bool complete)
{
    switch (code) {
    case OK: return {KVBLOB_ROW_READY, {}};
    case OBJECT_ALREADY_EXISTS:
        if (complete) return {KVBLOB_ROW_READY, "already stored; left as it was"};
        return {KVBLOB_ROW_NOT_READY, "another writer is storing this key"};
    case REPLICA_IS_NOT_READY: return {KVBLOB_ROW_NOT_READY, code_name(code)};
    case NO_AVAILABLE_HANDLE: return {KVBLOB_ROW_DECLINED, code_name(code) + ": the pool has no room"};
    case TRANSFER_FAIL:
        // The transfer engine may still be reading the span (R-REG-2).
        return {KVBLOB_ROW_FAULT, code_name(code) + "; the transfer may still be reading", true};
    default: return fault(code);
    }
}

Answer get_answer(int64_t read, uint64_t row_bytes)
{
    if (read >= 0) {
        if (static_cast<uint64_t>(read) == row_bytes) return {KVBLOB_ROW_READY, {}};
        // R-ROW-5: the head of the span may hold the shorter object's bytes.
        return {KVBLOB_ROW_FAULT, "stored object is " + std::to_string(read) + " bytes; the row's span holds " +
                                      std::to_string(row_bytes)};
    }
    switch (read) {
    case OBJECT_NOT_FOUND: return {KVBLOB_ROW_MISS, {}};
    case REPLICA_IS_NOT_READY: return {KVBLOB_ROW_NOT_READY, code_name(read)};
    case BUFFER_OVERFLOW:
        return {KVBLOB_ROW_FAULT, code_name(read) + ": the stored object is larger than the row's span"};
    case TRANSFER_FAIL:
        // The transfer engine may still be writing into the span: access
        // cannot be proven to have ended (R-REG-2).
        return {KVBLOB_ROW_FAULT, code_name(read) + "; the transfer may still land", true};
    default: return fault(read);
    }
}

Answer probe_answer(int64_t exists)
{
    if (exists == 1) return {KVBLOB_ROW_READY, {}};
    if (exists == 0) return {KVBLOB_ROW_MISS, {}};
    if (exists == REPLICA_IS_NOT_READY) return {KVBLOB_ROW_NOT_READY, code_name(exists)};
    return fault(exists);
}

Answer remove_answer(int64_t code)
{
    switch (code) {
    case OK: return {KVBLOB_ROW_READY, {}};
    case OBJECT_NOT_FOUND: return {KVBLOB_ROW_MISS, {}};
    case REPLICA_IS_NOT_READY:
    case OBJECT_HAS_LEASE: return {KVBLOB_ROW_NOT_READY, code_name(code)};
    default: return fault(code);
    }
}

}  // namespace kvblob::mooncake
