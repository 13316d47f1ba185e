// The Redis server a test runs beside (tests/redis/with_redis.sh gives its
// URL in KVBLOB_REDIS_URL): where it listens, and whether it answers.
#pragma once

#include <cstdlib>
#include <string>

#include "support/process.hpp"

namespace redis_test {

// NULL outside with_redis.sh: the test skips.
inline const char *redis_url() { return std::getenv("KVBLOB_REDIS_URL"); }

inline int port_of(const std::string &url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

inline bool server_answers(int port)
{
    return run_command("redis-cli -p " + std::to_string(port) + " ping").output.find("PONG") != std::string::npos;
}

}  // namespace redis_test
