#include "kvblob/tools/metrics_endpoint.hpp"

#include <httplib.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "kvblob/host/metrics.hpp"

namespace kvblob::tools {

ListenAddress parse_listen_address(const std::string &text)
{
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos)
        throw std::invalid_argument("'" + text + "' is not HOST:PORT (for example 127.0.0.1:9464)");
    ListenAddress out;
    out.host = text.substr(0, colon);
    if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
        out.host = out.host.substr(1, out.host.size() - 2);
    else if (out.host.find(':') != std::string::npos)
        throw std::invalid_argument("'" + text + "': write an IPv6 address in brackets, as [::1]:9464");
    if (out.host.empty()) throw std::invalid_argument("'" + text + "' names no host (127.0.0.1 serves this machine only)");
    const std::string port = text.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
        throw std::invalid_argument("'" + text + "': the port must be a number from 0 to 65535");
    out.port = static_cast<uint16_t>(value);
    return out;
}

namespace {

// Why address cannot be bound, asked of the kernel directly: cpp-httplib
// says only that it failed.
std::string bind_problem(const ListenAddress &address)
{
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    const std::string port = std::to_string(address.port);
    if (int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0)
        return std::string("the host cannot be resolved: ") + gai_strerror(rc);
    std::string why = "the address cannot be bound";
    for (addrinfo *a = found; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // as cpp-httplib binds
        const bool bound = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        const int error = errno;
        close(fd);
        why = bound ? "the address could not be listened on" : std::string(std::strerror(error));
        if (!bound && error == EADDRINUSE) why += " (another process listens there)";
        break;
    }
    freeaddrinfo(found);
    return why;
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(const ListenAddress &address)
    : address_(address), server_(std::make_unique<httplib::Server>())
{
    server_->Get("/metrics", [this](const httplib::Request &, httplib::Response &response) {
        response.set_content(prometheus_text(metrics_of_open_drivers()), "text/plain; version=0.0.4; charset=utf-8");
        ++scrapes_;
    });
    const int port = address.port == 0 ? server_->bind_to_any_port(address.host)
                                       : (server_->bind_to_port(address.host, address.port) ? address.port : -1);
    if (port <= 0)
        throw std::runtime_error("cannot serve metrics on " + address.host + ":" + std::to_string(address.port) + ": " +
                                 bind_problem(address));
    port_ = static_cast<uint16_t>(port);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
}

MetricsEndpoint::~MetricsEndpoint()
{
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

std::string MetricsEndpoint::url() const
{
    const bool v6 = address_.host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + address_.host + "]" : address_.host) + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace kvblob::tools
