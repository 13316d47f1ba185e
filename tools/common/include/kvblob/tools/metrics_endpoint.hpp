// An HTTP endpoint that serves the host's metrics of every open driver at
// /metrics, in Prometheus' text format, from a thread of its own (the HTTP
// server is cpp-httplib, Debian's libcpp-httplib-dev). For the tools and
// the example engine: the host library itself opens no socket.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace kvblob::tools {

// "HOST:PORT" as --metrics-listen takes it: an IPv4 address or name, or an
// IPv6 address in brackets ("[::1]:9464"); PORT 0 takes any free port.
struct ListenAddress {
    std::string host;
    uint16_t port = 0;
};
// Throws std::invalid_argument saying what is wrong with text.
ListenAddress parse_listen_address(const std::string &text);

class MetricsEndpoint {
public:
    // Binds address and starts serving. Throws std::runtime_error naming the
    // address and why it cannot be bound (taken, not this machine's...).
    explicit MetricsEndpoint(const ListenAddress &address);
    ~MetricsEndpoint();  // stops serving; a scrape in progress ends first
    MetricsEndpoint(const MetricsEndpoint &) = delete;
    MetricsEndpoint &operator=(const MetricsEndpoint &) = delete;

    uint16_t port() const { return port_; }
    // http://HOST:PORT/metrics
    std::string url() const;
    // Pages served so far.
    uint64_t scrapes() const { return scrapes_.load(); }

private:
    ListenAddress address_;
    uint16_t port_ = 0;
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    std::atomic<uint64_t> scrapes_{0};
};

}  // namespace kvblob::tools
