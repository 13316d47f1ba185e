// Redis Cluster routing: a key's hash slot (CRC16/XMODEM of the key, or of
// its {hash tag}, mod 16384) and which master serves each slot, read from
// CLUSTER SLOTS.
#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvblob::redis {

struct Endpoint {
    std::string host;
    int port = 0;
    bool operator==(const Endpoint &o) const { return port == o.port && host == o.host; }
    bool operator<(const Endpoint &o) const { return host < o.host || (host == o.host && port < o.port); }
    std::string text() const { return host + ":" + std::to_string(port); }
};

inline constexpr uint16_t slot_count = 16384;
uint16_t hash_slot(std::string_view key);

class SlotMap {
public:
    // From a CLUSTER SLOTS reply; nullopt when it is not one.
    static std::optional<SlotMap> from_reply(const redisReply &reply);
    // One node serving every slot (a single server).
    static SlotMap single(const Endpoint &node);

    const Endpoint *owner(uint16_t slot) const;
    // The node, when one serves every slot (a single server, not a
    // cluster): a key's slot need not be computed.
    const Endpoint *sole_owner() const { return single_ ? &masters_.front() : nullptr; }
    const std::vector<Endpoint> &masters() const { return masters_; }

private:
    std::vector<Endpoint> masters_;
    std::array<int16_t, slot_count> owner_{};  // index into masters_, -1: unserved
    bool single_ = false;                       // made by single()
};

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" -> the endpoint.
std::optional<Endpoint> redirect_target(std::string_view error);

}  // namespace kvblob::redis
