// The inspector's HTTP server over cpp-httplib (see inspector_http.hpp).
#include "debug/inspector_http.hpp"

#include <httplib.h>

#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace ebt::debug::http {

bool form_value(std::string_view form, std::string_view name, std::string& out) {
    httplib::Params params;
    httplib::detail::parse_query_text(std::string(form), params);
    const auto it = params.find(std::string(name));
    if (it == params.end()) return false;
    out = it->second;
    return true;
}

namespace {

/// The text of the answers httplib makes itself (the handler never saw the request).
std::string refusal(int status) {
    switch (status) {
    case 400: return "bad request: malformed, or not sent whole within the read timeout";
    case 404: return "no such page";
    case 413: return "request body larger than " + std::to_string(kMaxBodyBytes) + " bytes";
    case 414: return "request target too long";
    default: return "refused (HTTP " + std::to_string(status) + ")";
    }
}

}  // namespace

Server::Server(const std::string& address, std::uint16_t port, std::chrono::milliseconds read_timeout,
               Handler handler)
    : server_(std::make_unique<httplib::Server>()) {
    httplib::Server& s = *server_;
    s.set_payload_max_length(kMaxBodyBytes);
    s.set_read_timeout(read_timeout);
    s.set_write_timeout(std::chrono::seconds(2));
    // One request per connection (as "Connection: close"): no idle connections hold a worker thread.
    s.set_keep_alive_max_count(1);
    // SO_REUSEADDR (a restarted game gets its port back) but not httplib's default SO_REUSEPORT,
    // which would let a second server bind the same port.
    s.set_socket_options([](int fd) {
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    s.new_task_queue = [] { return new httplib::ThreadPool(4); };
    s.set_default_headers({{"Cache-Control", "no-store"}});
    const auto serve = [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
        Request r;
        r.method = req.method;
        r.target = req.target;
        r.host = req.get_header_value("Host");
        r.body = req.body;
        r.inspector_header = req.has_header("X-Ebt-Inspector");
        r.token = req.get_header_value("X-Ebt-Token");
        Response answer;
        try {
            answer = handler(r);
        } catch (const std::exception& e) {
            answer = {503, "text/plain; charset=utf-8", std::string("inspector error: ") + e.what() + "\n"};
        }
        res.status = answer.status;
        res.set_content(std::move(answer.body), answer.content_type.c_str());
    };
    s.Get(".*", serve);
    s.Post(".*", serve);
    // Called for every answer of 400 and above: only httplib's own refusals have no body yet.
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) res.set_content(refusal(res.status) + "\n", "text/plain; charset=utf-8");
    });

    errno = 0;
    const int bound = port == 0 ? s.bind_to_any_port(address) : (s.bind_to_port(address, port) ? port : -1);
    if (bound <= 0) {
        const std::error_code why = errno != 0 ? std::error_code(errno, std::generic_category())
                                               : std::make_error_code(std::errc::address_not_available);
        throw std::system_error(why, "inspector: cannot listen on " + address + ":" + std::to_string(port));
    }
    port_ = static_cast<std::uint16_t>(bound);
    thread_ = std::thread([&s] { s.listen_after_bind(); });
    // stop() only stops a server that is running: wait until it is, so that ~Server cannot miss it.
    while (!s.is_running()) std::this_thread::yield();
}

Server::~Server() {
    server_->stop();
    thread_.join();
}

}  // namespace ebt::debug::http
