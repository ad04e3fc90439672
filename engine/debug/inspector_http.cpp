// The inspector's HTTP server: request parsing, the poll loop, responses (see inspector_http.hpp).
#include "debug/inspector_http.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>
#include <vector>

namespace ebt::debug::http {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(c >= 'A' && c <= 'Z')) return false;
    return true;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

/// Sends all of `data` on a non-blocking socket, waiting (poll) at most ~2 s in all.
void send_all(int fd, std::string_view data) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return;
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, static_cast<int>(left.count()));
            continue;
        }
        return;  // the peer went away
    }
}

}  // namespace

ParseState parse_request(std::string_view data, Request& out, std::string& error) {
    const std::size_t head_end = data.find("\r\n\r\n");
    if (head_end == std::string_view::npos) {
        if (data.size() > kMaxHeaderBytes) {
            error = "request headers larger than " + std::to_string(kMaxHeaderBytes) + " bytes";
            return ParseState::TooLarge;
        }
        return ParseState::Incomplete;
    }
    if (head_end > kMaxHeaderBytes) {
        error = "request headers larger than " + std::to_string(kMaxHeaderBytes) + " bytes";
        return ParseState::TooLarge;
    }
    std::string_view head = data.substr(0, head_end);
    const std::size_t line_end = head.find("\r\n");
    const std::string_view line = head.substr(0, line_end);
    head = line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2);

    // Request line: METHOD SP target SP HTTP/1.x
    const std::size_t sp1 = line.find(' ');
    const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        error = "malformed request line";
        return ParseState::Bad;
    }
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (!is_token(method)) {
        error = "malformed method";
        return ParseState::Bad;
    }
    if (target.empty() || target.front() != '/') {
        error = "the target must be a path starting with '/'";
        return ParseState::Bad;
    }
    for (char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
            error = "control character in the target";
            return ParseState::Bad;
        }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        error = "unsupported HTTP version";
        return ParseState::Bad;
    }

    std::size_t content_length = 0;
    bool has_length = false;
    Request r;
    r.method = std::string(method);
    r.target = std::string(target);
    while (!head.empty()) {
        const std::size_t e = head.find("\r\n");
        const std::string_view h = head.substr(0, e);
        head = e == std::string_view::npos ? std::string_view{} : head.substr(e + 2);
        const std::size_t colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            error = "malformed header line";
            return ParseState::Bad;
        }
        const std::string_view name = h.substr(0, colon);
        const std::string_view value = trim(h.substr(colon + 1));
        if (iequals(name, "Content-Length")) {
            if (has_length || value.empty() || value.size() > 9) {
                error = "bad Content-Length";
                return ParseState::Bad;
            }
            std::size_t v = 0;
            for (char c : value) {
                if (c < '0' || c > '9') {
                    error = "bad Content-Length";
                    return ParseState::Bad;
                }
                v = v * 10 + static_cast<std::size_t>(c - '0');
            }
            content_length = v;
            has_length = true;
        } else if (iequals(name, "Transfer-Encoding")) {
            error = "Transfer-Encoding is not supported (send a Content-Length)";
            return ParseState::Bad;
        } else if (iequals(name, "Host")) {
            r.host = std::string(value);
        } else if (iequals(name, "X-Ebt-Inspector")) {
            r.inspector_header = true;
        }
    }
    if (content_length > kMaxBodyBytes) {
        error = "request body larger than " + std::to_string(kMaxBodyBytes) + " bytes";
        return ParseState::TooLarge;
    }
    const std::size_t body_start = head_end + 4;
    if (data.size() < body_start + content_length) return ParseState::Incomplete;
    if (data.size() > body_start + content_length) {
        error = "bytes after the request (pipelining is not supported)";
        return ParseState::Bad;
    }
    r.body = std::string(data.substr(body_start, content_length));
    out = std::move(r);
    return ParseState::Complete;
}

const char* reason(int status) noexcept {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

std::string serialize(const Response& response) {
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + reason(response.status) + "\r\n";
    out += "Content-Type: " + response.content_type + "\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
    out += response.body;
    return out;
}

bool url_decode(std::string_view in, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
        const char c = in[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            if (i + 2 >= in.size()) return false;
            const int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
            if (hi < 0 || lo < 0) return false;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += c;
        }
    }
    return true;
}

bool form_value(std::string_view form, std::string_view name, std::string& out, bool* malformed) {
    if (malformed) *malformed = false;
    while (!form.empty()) {
        const std::size_t amp = form.find('&');
        const std::string_view pair = form.substr(0, amp);
        form = amp == std::string_view::npos ? std::string_view{} : form.substr(amp + 1);
        const std::size_t eq = pair.find('=');
        std::string key;
        if (!url_decode(pair.substr(0, eq), key)) continue;
        if (key != name) continue;
        if (url_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), out)) return true;
        if (malformed) *malformed = true;
        return false;
    }
    return false;
}

Server::Server(std::uint16_t port, std::chrono::milliseconds request_timeout, Handler handler)
    : handler_(std::move(handler)), request_timeout_(request_timeout) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw_errno("inspector: socket()");
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only: never reachable from another machine
    addr.sin_port = htons(port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 16) != 0) {
        const int e = errno;
        ::close(listen_fd_);
        throw std::system_error(e, std::generic_category(),
                                "inspector: cannot listen on 127.0.0.1:" + std::to_string(port));
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
        const int e = errno;
        ::close(listen_fd_);
        throw std::system_error(e, std::generic_category(), "inspector: pipe()");
    }
    thread_ = std::thread([this] { run(); });
}

Server::~Server() {
    stop_.store(true);
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_pipe_[1], &byte, 1);
    thread_.join();
    ::close(listen_fd_);
    ::close(wake_pipe_[0]);
    ::close(wake_pipe_[1]);
}

void Server::run() {
    using Clock = std::chrono::steady_clock;
    struct Connection {
        int fd;
        std::string in;
        Clock::time_point deadline;
    };
    std::vector<Connection> connections;
    const auto finish = [&](std::size_t i, const Response& response) {
        send_all(connections[i].fd, serialize(response));
        ::shutdown(connections[i].fd, SHUT_WR);
        ::close(connections[i].fd);
        connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
    };
    const auto error_response = [](int status, const std::string& message) {
        return Response{status, "text/plain; charset=utf-8", message + "\n"};
    };
    // Reads what arrived on connection i and answers it once the request is whole. False when the
    // connection was closed (answered, or gone).
    const auto read_and_serve = [&](std::size_t i) {
        char buf[4096];
        const ssize_t n = ::recv(connections[i].fd, buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
        if (n <= 0) {
            ::close(connections[i].fd);
            connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
            return false;
        }
        connections[i].in.append(buf, static_cast<std::size_t>(n));
        Request request;
        std::string error;
        switch (parse_request(connections[i].in, request, error)) {
        case ParseState::Incomplete: return true;
        case ParseState::Bad: finish(i, error_response(400, "bad request: " + error)); return false;
        case ParseState::TooLarge: finish(i, error_response(413, error)); return false;
        case ParseState::Complete: break;
        }
        request.port = port_;
        Response response;
        try {
            response = handler_(request);
        } catch (const std::exception& e) {
            response = error_response(503, std::string("inspector error: ") + e.what());
        }
        finish(i, response);
        return false;
    };
    std::vector<pollfd> fds;
    while (!stop_.load()) {
        fds.clear();
        fds.push_back({wake_pipe_[0], POLLIN, 0});
        fds.push_back({listen_fd_, POLLIN, 0});
        for (const Connection& c : connections) fds.push_back({c.fd, POLLIN, 0});
        const int ready = ::poll(fds.data(), fds.size(), 200);
        if (stop_.load()) break;
        if (ready < 0 && errno != EINTR) break;
        const Clock::time_point now = Clock::now();
        // Read what arrived, newest connections last; handle each whole request.
        for (std::size_t i = connections.size(); i-- > 0;) {
            if ((fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) && !read_and_serve(i)) continue;  // closed
            // Whatever it sent so far, a connection without a whole request by its deadline is closed.
            if (now >= connections[i].deadline) finish(i, error_response(408, "the request did not arrive in time"));
        }
        if (fds[1].revents & POLLIN) {
            for (;;) {
                const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) break;
                if (static_cast<int>(connections.size()) >= kMaxConnections) {
                    // The oldest connection makes room (a browser may hold idle ones open).
                    finish(0, error_response(503, "too many connections"));
                }
                connections.push_back({fd, {}, now + request_timeout_});
            }
        }
    }
    for (const Connection& c : connections) ::close(c.fd);
}

}  // namespace ebt::debug::http
