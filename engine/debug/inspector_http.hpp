// The inspector's HTTP server (private to the engine): a thin adapter over cpp-httplib (Debian
// libcpp-httplib-dev), which reads and parses the requests and writes the responses. This file only
// sets the limits (request sizes, the read timeout), turns each request into the small Request below,
// hands it to a handler and gives the requests httplib itself refuses (malformed, too large) a
// plain-text message.
//
// Owned by debug::Inspector. Constructed on the game thread (binding throws std::system_error when
// the address or port cannot be had); the handler runs on httplib's worker threads, several at once;
// the destructor stops the server and waits for its threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace httplib {
class Server;
}

namespace ebt::debug::http {

struct Request {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path and query, as sent ("/api/agents?q=patrol")
    std::string host;    // the Host header ("" when absent)
    std::string body;
    bool inspector_header = false;  // the request carries "X-Ebt-Inspector"
    std::string token;              // the X-Ebt-Token header ("" when absent)
};

struct Response {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
};

/// Limits of what the server accepts (request line and each header: httplib's own 8 KiB limit).
inline constexpr std::size_t kMaxBodyBytes = 16 * 1024;

/// The parameters of a query string or form body ("a=1&b=x%20y"), decoded by httplib; the first
/// `name=` wins. False when `name` is absent.
bool form_value(std::string_view form, std::string_view name, std::string& out);

class Server {
public:
    using Handler = std::function<Response(const Request&)>;
    /// Binds `address`:`port` (0: a free port) and starts serving. A connection that sends nothing
    /// for `read_timeout` while a request is due is closed.
    Server(const std::string& address, std::uint16_t port, std::chrono::milliseconds read_timeout, Handler handler);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    std::uint16_t port() const noexcept { return port_; }

private:
    std::unique_ptr<httplib::Server> server_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

}  // namespace ebt::debug::http
