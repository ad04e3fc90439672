// The inspector's small HTTP/1.1 server (private to the engine): one thread, POSIX sockets, bound to
// 127.0.0.1 only. It reads each request whole (bounded sizes, a deadline per connection), hands it to
// a handler and writes the response with "Connection: close". A malformed request gets 400 without
// reaching the handler.
//
// Owned by debug::Inspector. Constructed on the game thread (binding throws std::system_error when
// the port cannot be had); the handler runs on the server thread; the destructor stops the thread
// and closes every socket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace ebt::debug::http {

struct Request {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path and query, as sent ("/api/agents?q=patrol")
    std::string host;    // the Host header ("" when absent)
    std::string body;
    bool inspector_header = false;  // the request carries "X-Ebt-Inspector" (see Server)
    std::uint16_t port = 0;         // the port the server listens on (set by the Server)
};

struct Response {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
};

/// Limits of what the server accepts.
inline constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
inline constexpr std::size_t kMaxBodyBytes = 16 * 1024;
inline constexpr int kMaxConnections = 32;

/// Outcome of parsing the bytes received so far on one connection.
enum class ParseState { Incomplete, Complete, Bad, TooLarge };
/// Parses `data` as one HTTP/1.x request. On Bad or TooLarge `error` says why.
ParseState parse_request(std::string_view data, Request& out, std::string& error);

/// The reason phrase of a status code ("Bad Request").
const char* reason(int status) noexcept;
/// The bytes of a whole response, headers included.
std::string serialize(const Response& response);

/// Decodes %XX and '+' (application/x-www-form-urlencoded). False on a bad escape.
bool url_decode(std::string_view in, std::string& out);
/// The value of `name` in a query string or form body ("a=1&b=x%20y"), decoded; false when absent
/// or badly encoded (then `*malformed`, when given, is set).
bool form_value(std::string_view form, std::string_view name, std::string& out, bool* malformed = nullptr);

class Server {
public:
    using Handler = std::function<Response(const Request&)>;
    /// Binds 127.0.0.1:`port` (0: a free port) and starts serving. A connection that has not sent a
    /// whole request within `request_timeout` of connecting is answered 408 and closed.
    Server(std::uint16_t port, std::chrono::milliseconds request_timeout, Handler handler);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    std::uint16_t port() const noexcept { return port_; }

private:
    void run();
    Handler handler_;
    std::chrono::milliseconds request_timeout_;
    int listen_fd_ = -1;
    int wake_pipe_[2] = {-1, -1};  // written by the destructor so that poll() returns at once
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace ebt::debug::http
