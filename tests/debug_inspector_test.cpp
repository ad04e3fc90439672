// The live inspector (include/ebt/debug/inspector.hpp): the JSON it serves for a small world, its
// command queue (applied between frames, in order, type-checked writes), and its HTTP server on
// 127.0.0.1 (the page, the JSON, a command, bad requests). The browser test is
// tests/browser/inspector_test.py.
#include <ebt/debug/inspector.hpp>
#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace inspector_test {

/// The README's guard: Patrol until enemy_seen, then engage/Attack; and an hp key.
struct Guards {
    Registry actions;
    Tree tree;
    World world;
    AgentHandle a, b;
    Guards() {
        actions.add_action("Patrol", [](ActionContext&) { return Status::Running; });
        actions.add_action("Attack", [](ActionContext&) { return Status::Running; });
        tree = TreeBuilder("guard", actions)
                   .key<bool>("enemy_seen")
                   .key<int>("hp", 100)
                   .active_selector()
                   .sequence()
                   .label("engage")
                   .check("enemy_seen")
                   .action("Attack")
                   .back()
                   .action("Patrol")
                   .back()
                   .end();
        a = world.spawn(tree);
        b = world.spawn(tree);
    }
};

debug::InspectorOptions offline() {
    debug::InspectorOptions o;
    o.serve = false;
    o.publish_interval = 0ms;  // a snapshot at every before_frame
    return o;
}

std::string handle_text(AgentHandle h) { return std::to_string(h.index) + "." + std::to_string(h.generation); }

/// The game loop on a thread of its own (as a game runs it), so that the test thread can wait for
/// commands like the server thread does. Stop it before reading the world.
struct GameLoop {
    debug::Inspector& inspector;
    World& world;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> iterations{0};
    std::thread thread;
    GameLoop(debug::Inspector& i, World& w) : inspector(i), world(w) {
        thread = std::thread([this] {
            while (!stop.load()) {
                if (inspector.before_frame()) inspector.after_frame(world.step(10ms));
                iterations.fetch_add(1);
                std::this_thread::sleep_for(1ms);
            }
        });
    }
    /// Waits until the loop has run `n` more times (whatever the machine's load).
    void wait_iterations(std::uint64_t n) {
        const std::uint64_t target = iterations.load() + n;
        while (iterations.load() < target) std::this_thread::sleep_for(1ms);
    }
    void join() {
        stop.store(true);
        if (thread.joinable()) thread.join();
    }
    ~GameLoop() { join(); }
};

}  // namespace inspector_test

using namespace inspector_test;

TEST_CASE("inspector: the state and the agent list of a small world, exact JSON") {
    Guards g;
    debug::Inspector inspector(g.world, offline());
    CHECK(inspector.port() == 0);

    auto r = inspector.handle("GET", "/api/state");
    CHECK(r.status == 200);
    CHECK(r.content_type == "application/json");
    CHECK(r.body == R"({"frame":0,"time_us":0,"agents":2,"paused":false,"read_only":false})");
    // Nothing published yet: snapshots are made between frames, for whoever asked.
    CHECK(inspector.handle("GET", "/api/agents").body == R"({"pending":true,"total":0,"matched":0,"agents":[]})");

    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/agents").body ==
          R"({"pending":false,"frame":0,"total":2,"matched":2,"agents":[)"
          R"({"handle":")" + handle_text(g.a) + R"(","tree":"guard","status":"Invalid","running":null,"path":null},)"
          R"({"handle":")" + handle_text(g.b) + R"(","tree":"guard","status":"Invalid","running":null,"path":null}]})");

    inspector.after_frame(g.world.step(50ms));
    g.world.at(g.b).blackboard().set("enemy_seen", true);
    REQUIRE(inspector.before_frame());
    inspector.after_frame(g.world.step(50ms));
    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/state").body == R"({"frame":2,"time_us":100000,"agents":2,"paused":false,"read_only":false})");
    // Search by the running behavior (the deepest running node's label or path), case-insensitive.
    CHECK(inspector.handle("GET", "/api/agents?q=ATTACK").body ==
          R"({"pending":false,"frame":2,"total":2,"matched":1,"agents":[)"
          R"({"handle":")" + handle_text(g.b) + R"(","tree":"guard","status":"Running","running":"Attack",)"
          R"("path":"/ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1]"}]})");
    CHECK(inspector.handle("GET", "/api/agents?q=patrol&limit=0").body ==
          R"({"pending":false,"frame":2,"total":2,"matched":1,"agents":[]})");
    // By handle.
    CHECK(inspector.handle("GET", "/api/agents?q=" + handle_text(g.a)).body.find("\"matched\":1,") != std::string::npos);

    CHECK(inspector.handle("GET", "/api/agents?limit=x").status == 400);
    CHECK(inspector.handle("GET", "/api/agents?limit=x").body == R"({"error":"limit must be a number from 0 to 9999, got 'x'"})");
    // A bad %-escape is taken as it is (httplib's query decoding): it matches nothing.
    CHECK(inspector.handle("GET", "/api/agents?q=%zz").body ==
          R"({"pending":false,"frame":2,"total":2,"matched":0,"agents":[]})");
    CHECK(inspector.handle("GET", "/api/nothing").status == 404);
    CHECK(inspector.handle("POST", "/api/state").status == 405);
    CHECK(inspector.handle("GET", "/api/pause").status == 405);
}

TEST_CASE("inspector: one agent's tree, statuses, blackboard and recent events, exact JSON") {
    Guards g;
    debug::Inspector inspector(g.world, offline());
    const std::string h = handle_text(g.b);

    // The first request selects the agent; its snapshot comes with the next before_frame.
    CHECK(inspector.handle("GET", "/api/agent?handle=" + h).body == R"({"handle":")" + h + R"(","pending":true})");
    REQUIRE(inspector.before_frame());  // the inspector starts listening to this agent
    inspector.after_frame(g.world.step(50ms));
    g.world.at(g.b).blackboard().set("enemy_seen", true);
    REQUIRE(inspector.before_frame());
    inspector.after_frame(g.world.step(50ms));
    REQUIRE(inspector.before_frame());

    const std::string nodes =
        R"("nodes":[{"index":0,"parent":-1,"kind":"ActiveSelector","label":"ActiveSelector","guard":null,"status":"Running"},)"
        R"({"index":1,"parent":0,"kind":"Sequence","label":"engage","guard":"LowerPriority","status":"Running"},)"
        R"({"index":2,"parent":1,"kind":"Condition","label":"enemy_seen","guard":null,"status":"Invalid"},)"
        R"({"index":3,"parent":1,"kind":"Action","label":"Attack","guard":null,"status":"Running"},)"
        R"({"index":4,"parent":0,"kind":"Action","label":"Patrol","guard":null,"status":"Aborted"}])";
    const std::string blackboard =
        R"("blackboard":[{"key":"enemy_seen","type":"bool","value":"true","shared":false},)"
        R"({"key":"hp","type":"int","value":"100","shared":false}])";
    // engage's leading condition is its guard (never run itself). Frame 0: Patrol starts (the guard is
    // false). Frame 1: the guard wakes, Patrol is aborted, engage and Attack start.
    const std::string events =
        R"("events":[{"frame":0,"tick":0,"node":0,"label":"ActiveSelector","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":1,"label":"engage","what":"guard false","times":1},)"
        R"({"frame":0,"tick":0,"node":4,"label":"Patrol","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":4,"label":"Patrol","what":"Update Running","times":1},)"
        R"({"frame":1,"tick":1,"node":1,"label":"engage","what":"guard true","times":1},)"
        R"({"frame":1,"tick":1,"node":4,"label":"Patrol","what":"Terminate Aborted","times":1},)"
        R"({"frame":1,"tick":1,"node":1,"label":"engage","what":"Initialize","times":1},)"
        R"({"frame":1,"tick":1,"node":3,"label":"Attack","what":"Initialize","times":1},)"
        R"({"frame":1,"tick":1,"node":3,"label":"Attack","what":"Update Running","times":1}])";
    CHECK(inspector.handle("GET", "/api/agent?handle=" + h).body ==
          R"({"handle":")" + h + R"(","frame":2,"tree":"guard","mode":"event","ticks":2,)" + nodes + "," + blackboard +
              "," + events + "}");

    // A running action's update in consecutive frames is one row, counted.
    for (int i = 0; i < 3; ++i) {
        inspector.after_frame(g.world.step(50ms));
        REQUIRE(inspector.before_frame());
    }
    const std::string body = inspector.handle("GET", "/api/agent?handle=" + h).body;
    const std::string last = R"({"frame":4,"tick":4,"node":3,"label":"Attack","what":"Update Running","times":4}]})";
    CHECK(body.substr(body.size() - last.size()) == last);
    CHECK(body.find(R"({"frame":1,"tick":1,"node":3,"label":"Attack","what":"Initialize","times":1},{"frame":4,)") !=
          std::string::npos);

    CHECK(inspector.handle("GET", "/api/agent?handle=banana").status == 400);
    CHECK(inspector.handle("GET", "/api/agent").body ==
          R"({"error":"/api/agent needs handle=INDEX.GENERATION, e.g. /api/agent?handle=0.1"})");

    // A despawned agent is reported gone.
    g.world.despawn(g.b);
    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/agent?handle=" + h).body == R"({"handle":")" + h + R"(","gone":true})");
    CHECK(g.world.listeners().empty());  // it never was a World listener
}

TEST_CASE("inspector: the metrics history keeps the last frames, exact JSON") {
    Guards g;
    debug::InspectorOptions o = offline();
    o.history_frames = 2;
    debug::Inspector inspector(g.world, o);
    CHECK(inspector.handle("GET", "/api/metrics").body == R"({"frames":[]})");
    for (std::uint64_t f = 0; f < 3; ++f) {
        REQUIRE(inspector.before_frame());
        FrameMetrics m;
        m.frame = f;
        m.agents_stepped = 2;
        m.behaviors_updated = 2;
        m.guards_evaluated = static_cast<std::uint32_t>(f);
        m.events_handled = static_cast<std::uint32_t>(10 + f);
        m.wall_time = std::chrono::nanoseconds(1'250'000 * (f + 1));
        inspector.after_frame(m);
    }
    CHECK(inspector.handle("GET", "/api/metrics").body ==
          R"({"frames":[{"frame":1,"wall_ms":2.5,"events":11,"agents":2,"guards":1,"updates":2},)"
          R"({"frame":2,"wall_ms":3.75,"events":12,"agents":2,"guards":2,"updates":2}]})");
}

TEST_CASE("inspector: nobody watching: no snapshots and no listener") {
    Guards g;
    debug::InspectorOptions o = offline();
    o.watch_timeout = 0ms;  // every request is already old at the next frame
    debug::Inspector inspector(g.world, o);
    CHECK(inspector.handle("GET", "/api/agent?handle=" + handle_text(g.a)).body.find("pending") != std::string::npos);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(inspector.before_frame());
        CHECK(g.world.listeners().empty());
        CHECK(g.world.listener(g.a) == nullptr);  // the selected agent is not tapped either
        inspector.after_frame(g.world.step(50ms));
    }
    CHECK(inspector.handle("GET", "/api/agents").body == R"({"pending":true,"total":0,"matched":0,"agents":[]})");
    // The state is always current.
    CHECK(inspector.handle("GET", "/api/state").body == R"({"frame":3,"time_us":150000,"agents":2,"paused":false,"read_only":false})");
}

TEST_CASE("inspector: pause, single step and resume are applied between frames") {
    Guards g;
    debug::Inspector inspector(g.world, offline());
    GameLoop loop(inspector, g.world);
    loop.wait_iterations(3);

    auto r = inspector.handle("POST", "/api/pause");
    CHECK(r.status == 200);
    const std::string paused_at = r.body;  // {"ok":true,"paused":true,"frame":F}
    REQUIRE(paused_at.rfind(R"({"ok":true,"paused":true,"frame":)", 0) == 0);
    const std::uint64_t frame = std::stoull(paused_at.substr(paused_at.rfind(':') + 1));
    loop.wait_iterations(20);
    CHECK(inspector.handle("GET", "/api/state").body.find("\"frame\":" + std::to_string(frame) + ",") != std::string::npos);
    CHECK(inspector.handle("GET", "/api/state").body.find("\"paused\":true") != std::string::npos);

    // One step: exactly one frame, then paused again.
    CHECK(inspector.handle("POST", "/api/step").body ==
          R"({"ok":true,"paused":true,"frame":)" + std::to_string(frame) + "}");
    loop.wait_iterations(20);
    CHECK(inspector.handle("GET", "/api/state").body.find("\"frame\":" + std::to_string(frame + 1) + ",") !=
          std::string::npos);
    // Two steps queued back to back: two frames.
    CHECK(inspector.handle("POST", "/api/step").status == 200);
    CHECK(inspector.handle("POST", "/api/step").status == 200);
    loop.wait_iterations(20);
    CHECK(inspector.handle("GET", "/api/state").body.find("\"frame\":" + std::to_string(frame + 3) + ",") !=
          std::string::npos);

    CHECK(inspector.handle("POST", "/api/resume").body ==
          R"({"ok":true,"paused":false,"frame":)" + std::to_string(frame + 3) + "}");
    loop.wait_iterations(20);
    loop.join();
    CHECK(g.world.frame() > frame + 3);
    CHECK_FALSE(inspector.paused());
}

TEST_CASE("inspector: writing a blackboard key is type-checked; aborting an agent") {
    Guards g;
    debug::Inspector inspector(g.world, offline());
    const std::string h = handle_text(g.a);
    GameLoop loop(inspector, g.world);
    CHECK(inspector.handle("POST", "/api/pause").status == 200);

    auto r = inspector.handle("POST", "/api/write", "handle=" + h + "&key=hp&value=+42");
    CHECK(r.status == 200);
    CHECK(r.body == R"({"ok":true,"handle":")" + h + R"(","key":"hp","value":"42"})");
    r = inspector.handle("POST", "/api/write", "handle=" + h + "&key=enemy_seen&value=banana");
    CHECK(r.status == 400);
    CHECK(r.body == R"({"error":"key 'enemy_seen' is a bool: 'banana' is not a bool"})");
    r = inspector.handle("POST", "/api/write", "handle=" + h + "&key=hp&value=4.5");
    CHECK(r.body == R"({"error":"key 'hp' is a int: '4.5' is not a int"})");
    r = inspector.handle("POST", "/api/write", "handle=" + h + "&key=mana&value=3");
    CHECK(r.status == 400);
    CHECK(r.body == R"({"error":"agent )" + h + R"J( has no blackboard key 'mana' (its keys: enemy_seen, hp)"})J");
    r = inspector.handle("POST", "/api/write", "handle=77.0&key=hp&value=3");
    CHECK(r.status == 404);
    CHECK(r.body == R"J({"error":"agent 77.0 does not exist (any more)"})J");
    CHECK(inspector.handle("POST", "/api/write", "handle=" + h + "&key=hp").body ==
          R"({"error":"/api/write needs value=TEXT in its body"})");
    CHECK(inspector.handle("POST", "/api/abort", "").body ==
          R"({"error":"/api/abort needs handle=INDEX.GENERATION in its body"})");

    // Abort: the running nodes end Aborted (the tree starts afresh at its next tick).
    CHECK(inspector.handle("POST", "/api/write", "handle=" + h + "&key=enemy_seen&value=true").status == 200);
    CHECK(inspector.handle("POST", "/api/step").status == 200);
    loop.wait_iterations(5);
    CHECK(inspector.handle("POST", "/api/abort", "handle=" + h).body == R"({"ok":true,"handle":")" + h + R"("})");
    loop.join();
    const Agent& agent = g.world.at(g.a);
    CHECK(agent.blackboard().get<int>("hp") == 42);
    CHECK(agent.blackboard().get<bool>("enemy_seen"));
    CHECK(agent.status(agent.tree().find("Attack")) == Status::Aborted);
    CHECK(agent.status() == Status::Aborted);
    CHECK(g.world.at(g.b).status() == Status::Running);  // the other agent is untouched
}

TEST_CASE("inspector: a command nobody applies times out and is dropped") {
    Guards g;
    debug::InspectorOptions o = offline();
    o.command_timeout = 20ms;
    debug::Inspector inspector(g.world, o);
    const auto r = inspector.handle("POST", "/api/pause");
    CHECK(r.status == 503);
    CHECK(r.body ==
          R"J({"error":"the game loop did not take the command in time (is it calling Inspector::before_frame?)"})J");
    CHECK(inspector.before_frame());  // the pause was withdrawn: not applied late
    CHECK_FALSE(inspector.paused());
}

namespace inspector_test {

/// Sends `request` to 127.0.0.1:port and returns everything the server answered before closing.
/// (The server answers one request per connection and closes it. A client that half-closes its side
/// before the answer is taken as gone by httplib and gets none.)
std::string http_exchange(std::uint16_t port, const std::string& request, bool half_close = false) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
    }
    if (half_close) ::shutdown(fd, SHUT_WR);
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }
std::string body_of(const std::string& response) {
    const std::size_t p = response.find("\r\n\r\n");
    return p == std::string::npos ? std::string() : response.substr(p + 4);
}

}  // namespace inspector_test

TEST_CASE("inspector: the HTTP server on 127.0.0.1: the page, the JSON, a command, bad requests") {
    Guards g;
    debug::InspectorOptions o;
    o.port = 0;  // a free port
    o.request_timeout = 300ms;  // the requests below that never finish are refused after this
    debug::Inspector inspector(g.world, o);
    const std::uint16_t port = inspector.port();
    REQUIRE(port != 0);
    CHECK(inspector.url() == "http://127.0.0.1:" + std::to_string(port) + "/");
    const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
    GameLoop loop(inspector, g.world);

    std::string r = http_exchange(port, "GET / HTTP/1.1\r\n" + host + "\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(r.find("Content-Type: text/html; charset=utf-8\r\n") != std::string::npos);
    CHECK(body_of(r) == debug::Inspector::page());
    CHECK(body_of(r).find("<title>ebt inspector</title>") != std::string::npos);
    CHECK(body_of(r).find("http") == body_of(r).find("http://www.w3.org/2000/svg"));  // nothing fetched from elsewhere

    r = http_exchange(port, "GET /api/state HTTP/1.1\r\nHost: localhost:" + std::to_string(port) + "\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(r.find("Content-Type: application/json\r\n") != std::string::npos);
    CHECK(body_of(r).rfind(R"({"frame":)", 0) == 0);

    const std::string form = "Content-Type: application/x-www-form-urlencoded\r\n";
    r = http_exchange(port, "POST /api/pause HTTP/1.1\r\n" + host + "X-Ebt-Inspector: 1\r\nContent-Length: 0\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(body_of(r).rfind(R"({"ok":true,"paused":true,"frame":)", 0) == 0);
    const std::string body = "handle=" + handle_text(g.a) + "&key=hp&value=7";
    r = http_exchange(port, "POST /api/write HTTP/1.1\r\n" + host + form + "X-Ebt-Inspector: 1\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
    CHECK(body_of(r) == R"({"ok":true,"handle":")" + handle_text(g.a) + R"(","key":"hp","value":"7"})");

    // A command without the page's header (a form posted by another site) is refused.
    r = http_exchange(port, "POST /api/resume HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 403 Forbidden");
    CHECK(body_of(r) == R"J({"error":"commands need the header X-Ebt-Inspector (the page sends it)"})J");
    // So is a request for another host name (DNS rebinding).
    r = http_exchange(port, "GET /api/state HTTP/1.1\r\nHost: evil.example:" + std::to_string(port) + "\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 403 Forbidden");

    // Bad requests: 400, and the server carries on.
    CHECK(status_line(http_exchange(port, "GARBAGE\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
    CHECK(body_of(http_exchange(port, "GARBAGE\r\n\r\n")) ==
          "bad request: malformed, or not sent whole within the read timeout\n");
    CHECK(status_line(http_exchange(port, "GET nothing HTTP/1.1\r\n" + host + "\r\n")) == "HTTP/1.1 404 Not Found");
    CHECK(status_line(http_exchange(port, "GET / HTTP/2.0\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
    // A chunked body that never ends: httplib waits for it, then refuses the request.
    CHECK(status_line(http_exchange(port, "POST /api/step HTTP/1.1\r\n" + host +
                                              "Transfer-Encoding: chunked\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
    CHECK(status_line(http_exchange(port, "GET /api/agent?handle=x HTTP/1.1\r\n" + host + "\r\n")) ==
          "HTTP/1.1 400 Bad Request");
    CHECK(status_line(http_exchange(port, "GET /nothing HTTP/1.1\r\n" + host + "\r\n")) == "HTTP/1.1 404 Not Found");
    // Too large: a header line past 8 KiB (httplib: 400), a body past 16 KiB (413; httplib reads and
    // drops what comes of it, here nothing until the read timeout).
    CHECK(status_line(http_exchange(port, "GET / HTTP/1.1\r\n" + host + "X: " + std::string(9000, 'a') + "\r\n\r\n")) ==
          "HTTP/1.1 400 Bad Request");
    r = http_exchange(port, "POST /api/write HTTP/1.1\r\n" + host + "X-Ebt-Inspector: 1\r\nContent-Length: 20000\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 413 Payload Too Large");
    CHECK(body_of(r) == "request body larger than 16384 bytes\n");
    // A client that sends half a request and hangs up does not disturb the next one.
    http_exchange(port, "GET /api/sta", true);
    r = http_exchange(port, "GET /api/state HTTP/1.1\r\n" + host + "\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(body_of(r).find("\"paused\":true") != std::string::npos);

    loop.join();
    CHECK(g.world.at(g.a).blackboard().get<int>("hp") == 7);
}

TEST_CASE("inspector: a client that does not finish its request in time gets 400 and is closed") {
    Guards g;
    debug::InspectorOptions o;
    o.request_timeout = 300ms;
    debug::Inspector inspector(g.world, o);
    // Half a request, then nothing more, the connection left open: answered when httplib's read
    // times out (it answers 400, not 408).
    const std::string r = http_exchange(inspector.port(), "GET /api/state HTTP/1.1\r\n", false);
    CHECK(status_line(r) == "HTTP/1.1 400 Bad Request");
    CHECK(body_of(r) == "bad request: malformed, or not sent whole within the read timeout\n");
}

TEST_CASE("inspector: a busy port is refused with the port in the message") {
    Guards g;
    debug::Inspector first(g.world, {});
    debug::InspectorOptions o;
    o.port = first.port();
    try {
        debug::Inspector second(g.world, o);
        FAIL("the second inspector bound the same port");
    } catch (const std::system_error& e) {
        CHECK(std::string(e.what()).rfind("inspector: cannot listen on 127.0.0.1:" + std::to_string(first.port()), 0) == 0);
    }
}

TEST_CASE("inspector: an address that is not loopback needs a token, and every request must carry it") {
    Guards g;
    debug::InspectorOptions o;
    o.address = "0.0.0.0";
    try {
        debug::Inspector refused(g.world, o);
        FAIL("bound 0.0.0.0 without a token");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) ==
              "inspector: binding 0.0.0.0 (not loopback) needs InspectorOptions::token: without it anyone who can "
              "reach that address could pause the world and write blackboards");
    }
    CHECK(g.world.listeners().empty());  // the world is untouched

    o.token = "s3cret";
    o.request_timeout = 300ms;
    debug::Inspector inspector(g.world, o);
    const std::string port = std::to_string(inspector.port());
    CHECK(inspector.url() == "http://0.0.0.0:" + port + "/?token=s3cret");
    // With a token the Host may be any name the machine is reached by.
    const std::string host = "Host: gameserver.lan:" + port + "\r\n";

    std::string r = http_exchange(inspector.port(), "GET /api/state HTTP/1.1\r\n" + host + "\r\n");
    CHECK(status_line(r) == "HTTP/1.1 401 Unauthorized");
    CHECK(body_of(r) ==
          R"({"error":"this inspector needs its token: send the header X-Ebt-Token, or open the page as /?token=TOKEN"})");
    r = http_exchange(inspector.port(), "GET /api/state HTTP/1.1\r\n" + host + "X-Ebt-Token: s3cre\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 401 Unauthorized");
    r = http_exchange(inspector.port(), "GET /?token=wrong HTTP/1.1\r\n" + host + "\r\n");
    CHECK(status_line(r) == "HTTP/1.1 401 Unauthorized");

    r = http_exchange(inspector.port(), "GET /api/state HTTP/1.1\r\n" + host + "X-Ebt-Token: s3cret\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(body_of(r) == R"({"frame":0,"time_us":0,"agents":2,"paused":false,"read_only":false})");
    r = http_exchange(inspector.port(), "GET /?token=s3cret HTTP/1.1\r\n" + host + "\r\n");
    CHECK(status_line(r) == "HTTP/1.1 200 OK");
    CHECK(body_of(r) == debug::Inspector::page());
    // A command without the token is refused before it is queued.
    r = http_exchange(inspector.port(), "POST /api/pause HTTP/1.1\r\n" + host + "X-Ebt-Inspector: 1\r\nContent-Length: 0\r\n\r\n");
    CHECK(status_line(r) == "HTTP/1.1 401 Unauthorized");
    CHECK(inspector.before_frame());
    CHECK_FALSE(inspector.paused());
}

TEST_CASE("inspector: read_only refuses every command with 403 and applies none") {
    Guards g;
    debug::InspectorOptions o = offline();
    o.read_only = true;
    o.command_timeout = 20ms;
    debug::Inspector inspector(g.world, o);
    CHECK(inspector.handle("GET", "/api/state").body == R"({"frame":0,"time_us":0,"agents":2,"paused":false,"read_only":true})");
    const std::string h = handle_text(g.a);
    for (const char* path : {"/api/pause", "/api/resume", "/api/step", "/api/abort", "/api/write"}) {
        const auto r = inspector.handle("POST", path, "handle=" + h + "&key=hp&value=1");
        CHECK(r.status == 403);
        CHECK(r.body == R"({"error":"the inspector is read-only (InspectorOptions::read_only): )" + std::string(path) +
                            R"( is disabled"})");
    }
    CHECK(inspector.before_frame());  // nothing was queued
    CHECK_FALSE(inspector.paused());
    inspector.after_frame(g.world.step(50ms));
    CHECK(g.world.at(g.a).blackboard().get<int>("hp") == 100);
    CHECK(g.world.at(g.a).status() == Status::Running);
    // Reading still works; the page hides its command buttons (body.read-only .command).
    CHECK(inspector.handle("GET", "/api/agents").status == 200);
    CHECK(debug::Inspector::page().find("body.read-only .command { display:none; }") != std::string_view::npos);
}

namespace inspector_test {

/// An agent's own listener, as a game has one: every event, formatted ("3 4:T(Aborted)").
struct EventLog final : TraceListener {
    std::vector<std::string> lines;
    void on_event(const TraceEvent& e) override { lines.push_back(format(e)); }
    /// The lines joined with ", " (what the checks compare: doctest prints strings).
    std::string text() const {
        std::string out;
        for (const std::string& line : lines) out += (out.empty() ? "" : ", ") + line;
        return out;
    }
};

/// One frame as a game runs it with an inspector.
void inspected_frame(debug::Inspector& inspector, World& world) {
    REQUIRE(inspector.before_frame());
    inspector.after_frame(world.step(50ms));
}

}  // namespace inspector_test

TEST_CASE("inspector: watching an agent taps that agent only, in front of its own listener") {
    // Two worlds with the same guards and the same writes, one inspected: the game's own listeners
    // must hear the same events in both, each once, in order.
    Guards g, twin;
    EventLog la, lb, twin_a, twin_b;
    g.world.set_listener(g.a, &la);
    g.world.set_listener(g.b, &lb);
    twin.world.set_listener(twin.a, &twin_a);
    twin.world.set_listener(twin.b, &twin_b);
    // (every member of InspectorOptions has a default: a designated subset compiles without warnings)
    debug::Inspector inspector(g.world, {.serve = false, .publish_interval = 0ms});
    const auto both = [&](const char* key, AgentHandle Guards::*agent, bool value) {
        g.world.at(g.*agent).blackboard().set(key, value);
        twin.world.at(twin.*agent).blackboard().set(key, value);
    };
    const auto abort_a = [&] {
        g.world.abort(g.a);
        twin.world.abort(twin.a);
    };
    const auto frames = [&](int n) {
        for (int i = 0; i < n; ++i) {
            inspected_frame(inspector, g.world);
            twin.world.step(50ms);
        }
    };

    both("enemy_seen", &Guards::a, true);  // a attacks, b patrols
    inspector.handle("GET", "/api/agent?handle=" + handle_text(g.a));
    frames(3);
    CHECK(g.world.listeners().empty());  // no World listener: nobody hears every agent
    CHECK(g.world.listener(g.a) != &la);  // the inspector's tap, in front of la
    CHECK(g.world.listener(g.a) != nullptr);
    CHECK(g.world.listener(g.b) == &lb);

    // Selecting b: a gets its own listener back, b is tapped.
    inspector.handle("GET", "/api/agent?handle=" + handle_text(g.b));
    frames(1);  // frame 3
    CHECK(g.world.listener(g.a) == &la);
    CHECK(g.world.listener(g.b) != &lb);
    both("enemy_seen", &Guards::b, true);  // b switches to Attack in frame 4...
    abort_a();                             // ...and a, aborted now, starts afresh
    frames(2);  // frames 4 and 5
    REQUIRE(inspector.before_frame());

    CHECK(la.text() == twin_a.text());
    CHECK(lb.text() == twin_b.text());
    CHECK(la.text() ==
          "0 0:I, 0 1:G=true, 0 1:I, 0 3:I, 0 3:U(Running), 1 3:U(Running), 2 3:U(Running), 3 3:U(Running), "
          "4 3:T(Aborted), 4 1:T(Aborted), 4 0:T(Aborted), "  // (between frames: the next frame's tick)
          "4 0:I, 4 1:G=true, 4 1:I, 4 3:I, 4 3:U(Running), 5 3:U(Running)");
    CHECK(lb.text() ==
          "0 0:I, 0 1:G=false, 0 4:I, 0 4:U(Running), 1 4:U(Running), 2 4:U(Running), 3 4:U(Running), 4 1:G=true, 4 4:T(Aborted), 4 1:I, 4 3:I, 4 3:U(Running), 5 3:U(Running)");
    // The inspector's recent events of b: b's since it was selected (frame 3), none of a's.
    const std::string body = inspector.handle("GET", "/api/agent?handle=" + handle_text(g.b)).body;
    const std::string events =
        R"("events":[{"frame":3,"tick":3,"node":4,"label":"Patrol","what":"Update Running","times":1},)"
        R"({"frame":4,"tick":4,"node":1,"label":"engage","what":"guard true","times":1},)"
        R"({"frame":4,"tick":4,"node":4,"label":"Patrol","what":"Terminate Aborted","times":1},)"
        R"({"frame":4,"tick":4,"node":1,"label":"engage","what":"Initialize","times":1},)"
        R"({"frame":4,"tick":4,"node":3,"label":"Attack","what":"Initialize","times":1},)"
        R"({"frame":5,"tick":5,"node":3,"label":"Attack","what":"Update Running","times":2}]})";
    REQUIRE(body.size() > events.size());
    CHECK(body.substr(body.size() - events.size()) == events);
}

TEST_CASE("inspector: the watched agent despawned: the tap goes with it, its slot's next agent keeps its own listener") {
    Guards g;
    EventLog lb, lc;
    g.world.set_listener(g.b, &lb);
    debug::Inspector inspector(g.world, offline());
    const std::string h = handle_text(g.b);
    inspector.handle("GET", "/api/agent?handle=" + h);
    inspected_frame(inspector, g.world);
    CHECK(g.world.listener(g.b) != &lb);
    const std::size_t heard = lb.lines.size();
    CHECK(heard == 4);  // 0 0:I, 0 1:G=false, 0 4:I, 0 4:U(Running)

    g.world.despawn(g.b);
    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/agent?handle=" + h).body == R"({"handle":")" + h + R"(","gone":true})");
    CHECK(g.world.listener(g.b) == nullptr);  // a stale handle
    // A new agent takes the freed slot with its own listener, untouched by the inspector.
    const AgentHandle c = g.world.spawn(g.tree, {.listener = &lc});
    CHECK(c.index == g.b.index);
    CHECK(g.world.listener(c) == &lc);
    inspector.after_frame(g.world.step(50ms));
    inspected_frame(inspector, g.world);
    CHECK(g.world.listener(c) == &lc);
    CHECK(lc.text() ==
          "1 0:I, 1 1:G=false, 1 4:I, 1 4:U(Running), 2 4:U(Running)");  // (ticks count the world's frames)
    CHECK(lb.lines.size() == heard);  // (its last agent's events ended with it: despawning runs no tick)
    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/agent?handle=" + h).body == R"({"handle":")" + h + R"(","gone":true})");
}

TEST_CASE("inspector: destroyed while watching: the agent's own listener is back and the tap is never called again") {
    Guards g;
    EventLog la;
    g.world.set_listener(g.a, &la);
    {
        debug::Inspector inspector(g.world, offline());
        inspector.handle("GET", "/api/agent?handle=" + handle_text(g.a));
        inspected_frame(inspector, g.world);
        CHECK(g.world.listener(g.a) != &la);
        inspector.handle("GET", "/api/agent?handle=" + handle_text(g.b));  // b has no listener of its own
        inspected_frame(inspector, g.world);
        CHECK(g.world.listener(g.a) == &la);
        CHECK(g.world.listener(g.b) != nullptr);
    }
    CHECK(g.world.listener(g.a) == &la);
    CHECK(g.world.listener(g.b) == nullptr);
    // (under AddressSanitizer a call to the destroyed tap would be a heap-use-after-free)
    g.world.step(50ms);
    g.world.abort(g.b);
    g.world.step(50ms);
    CHECK(la.lines.size() == 7);  // 0 0:I, 0 1:G=false, 0 4:I, then one Patrol update a frame (0 to 3)
    CHECK(la.lines.back() == "3 4:U(Running)");
}

TEST_CASE("inspector: the game replaces the watched agent's listener: the tap goes in front of the new one") {
    Guards g;
    EventLog la, lx, ly;
    g.world.set_listener(g.a, &la);
    std::optional<debug::Inspector> watching(std::in_place, g.world, offline());
    debug::Inspector& inspector = *watching;
    const std::string h = handle_text(g.a);
    inspector.handle("GET", "/api/agent?handle=" + h);
    inspected_frame(inspector, g.world);  // frame 0, tapped

    g.world.set_listener(g.a, &lx);  // the game's own change: the inspector does not hear frame 1
    CHECK(g.world.listener(g.a) == &lx);
    g.world.step(50ms);
    inspected_frame(inspector, g.world);  // frame 2: tapped again, in front of lx
    CHECK(g.world.listener(g.a) != &lx);
    CHECK(la.text() ==
          "0 0:I, 0 1:G=false, 0 4:I, 0 4:U(Running)");
    CHECK(lx.text() ==
          "1 4:U(Running), 2 4:U(Running)");
    REQUIRE(inspector.before_frame());
    const std::string body = inspector.handle("GET", "/api/agent?handle=" + h).body;
    const std::string events =
        R"("events":[{"frame":0,"tick":0,"node":0,"label":"ActiveSelector","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":1,"label":"engage","what":"guard false","times":1},)"
        R"({"frame":0,"tick":0,"node":4,"label":"Patrol","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":4,"label":"Patrol","what":"Update Running","times":1},)"
        R"({"frame":2,"tick":2,"node":4,"label":"Patrol","what":"Update Running","times":1}]})";
    REQUIRE(body.size() > events.size());
    CHECK(body.substr(body.size() - events.size()) == events);

    // Selecting another agent gives a the game's latest listener, not the one it had when tapped.
    inspector.handle("GET", "/api/agent?handle=" + handle_text(g.b));
    inspected_frame(inspector, g.world);
    CHECK(g.world.listener(g.a) == &lx);

    // Replaced again, and the inspector destroyed before it could notice: the game's choice stays.
    inspector.handle("GET", "/api/agent?handle=" + h);
    REQUIRE(inspector.before_frame());
    CHECK(g.world.listener(g.a) != &lx);
    g.world.set_listener(g.a, &ly);
    watching.reset();
    CHECK(g.world.listener(g.a) == &ly);
}

TEST_CASE("inspector: the watched agent's tree reloaded: the new tree's nodes, each event named in its own tree") {
    Guards g;
    EventLog lb;
    g.world.set_listener(g.b, &lb);
    debug::Inspector inspector(g.world, offline());
    const std::string h = handle_text(g.b);
    inspector.handle("GET", "/api/agent?handle=" + h);
    g.world.at(g.b).blackboard().set("enemy_seen", true);
    inspected_frame(inspector, g.world);  // frame 0: b attacks

    // A new version of "guard": a flee branch in front, so that every node after the root moves.
    g.actions.add_action("Runaway", [](ActionContext&) { return Status::Running; });
    const Tree v2 = TreeBuilder("guard", g.actions)
                        .key<bool>("enemy_seen")
                        .key<bool>("hp_low")
                        .key<int>("hp", 100)
                        .active_selector()
                        .sequence()
                        .label("flee")
                        .check("hp_low")
                        .action("Runaway")
                        .back()
                        .sequence()
                        .label("engage")
                        .check("enemy_seen")
                        .action("Attack")
                        .back()
                        .action("Patrol")
                        .back()
                        .end();
    const ReloadReport report = g.world.reload(v2);  // between frames: applied at once
    CHECK(report.agents_restarted == 2);
    inspected_frame(inspector, g.world);  // frame 1: b starts the new tree, enemy_seen carried
    CHECK(g.world.listener(g.b) != &lb);  // still tapped, in front of b's own listener
    REQUIRE(inspector.before_frame());

    const std::string body = inspector.handle("GET", "/api/agent?handle=" + h).body;
    const std::string nodes =
        R"("nodes":[{"index":0,"parent":-1,"kind":"ActiveSelector","label":"ActiveSelector","guard":null,"status":"Running"},)"
        R"({"index":1,"parent":0,"kind":"Sequence","label":"flee","guard":"LowerPriority","status":"Invalid"},)"
        R"({"index":2,"parent":1,"kind":"Condition","label":"hp_low","guard":null,"status":"Invalid"},)"
        R"({"index":3,"parent":1,"kind":"Action","label":"Runaway","guard":null,"status":"Invalid"},)"
        R"({"index":4,"parent":0,"kind":"Sequence","label":"engage","guard":"LowerPriority","status":"Running"},)"
        R"({"index":5,"parent":4,"kind":"Condition","label":"enemy_seen","guard":null,"status":"Invalid"},)"
        R"({"index":6,"parent":4,"kind":"Action","label":"Attack","guard":null,"status":"Running"},)"
        R"({"index":7,"parent":0,"kind":"Action","label":"Patrol","guard":null,"status":"Invalid"}])";
    CHECK(body.find(nodes) != std::string::npos);
    CHECK(body.find(R"({"key":"enemy_seen","type":"bool","value":"true","shared":false})") != std::string::npos);
    // The old tree's run ends Aborted, leaves first, named by the old tree's nodes (Attack was node 3
    // there; node 3 of the new tree is Runaway); then the new tree's first tick.
    const std::string events =
        R"("events":[{"frame":0,"tick":0,"node":0,"label":"ActiveSelector","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":1,"label":"engage","what":"guard true","times":1},)"
        R"({"frame":0,"tick":0,"node":1,"label":"engage","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":3,"label":"Attack","what":"Initialize","times":1},)"
        R"({"frame":0,"tick":0,"node":3,"label":"Attack","what":"Update Running","times":1},)"
        R"({"frame":1,"tick":1,"node":3,"label":"Attack","what":"Terminate Aborted","times":1},)"
        R"({"frame":1,"tick":1,"node":1,"label":"engage","what":"Terminate Aborted","times":1},)"
        R"({"frame":1,"tick":1,"node":0,"label":"ActiveSelector","what":"Terminate Aborted","times":1},)"
        R"({"frame":1,"tick":1,"node":0,"label":"ActiveSelector","what":"Initialize","times":1},)"
        R"({"frame":1,"tick":1,"node":1,"label":"flee","what":"guard false","times":1},)"
        R"({"frame":1,"tick":1,"node":4,"label":"engage","what":"guard true","times":1},)"
        R"({"frame":1,"tick":1,"node":4,"label":"engage","what":"Initialize","times":1},)"
        R"({"frame":1,"tick":1,"node":6,"label":"Attack","what":"Initialize","times":1},)"
        R"({"frame":1,"tick":1,"node":6,"label":"Attack","what":"Update Running","times":1}]})";
    REQUIRE(body.size() > events.size());
    CHECK(body.substr(body.size() - events.size()) == events);
    CHECK(lb.text() ==
          "0 0:I, 0 1:G=true, 0 1:I, 0 3:I, 0 3:U(Running), 1 3:T(Aborted), 1 1:T(Aborted), 1 0:T(Aborted), "
          "1 0:I, 1 1:G=false, 1 4:G=true, 1 4:I, 1 6:I, 1 6:U(Running)");
}

TEST_CASE("inspector: nobody watching: the game thread keeps the metrics; a page that comes later gets them all") {
    Guards g;
    debug::InspectorOptions o = offline();
    o.watch_timeout = 1h;
    const auto frame = [](std::uint64_t f) {
        FrameMetrics m;
        m.frame = f;
        m.events_handled = static_cast<std::uint32_t>(f);
        m.wall_time = std::chrono::nanoseconds(500'000);
        return m;
    };
    const auto row = [](std::uint64_t f) {
        return R"({"frame":)" + std::to_string(f) + R"(,"wall_ms":0.5,"events":)" + std::to_string(f) +
               R"(,"agents":0,"guards":0,"updates":0})";
    };
    debug::Inspector inspector(g.world, o);
    for (std::uint64_t f = 0; f < 3; ++f) {
        REQUIRE(inspector.before_frame());
        inspector.after_frame(frame(f));
    }
    // The state is current without anyone asking; the page's copy of the metrics is made at the next
    // frame after its first request.
    CHECK(inspector.handle("GET", "/api/state").body == R"({"frame":0,"time_us":0,"agents":2,"paused":false,"read_only":false})");
    CHECK(inspector.handle("GET", "/api/metrics").body == R"({"frames":[]})");
    REQUIRE(inspector.before_frame());
    CHECK(inspector.handle("GET", "/api/metrics").body ==
          R"({"frames":[)" + row(0) + "," + row(1) + "," + row(2) + "]}");
    inspector.after_frame(frame(3));
    CHECK(inspector.handle("GET", "/api/metrics").body ==
          R"({"frames":[)" + row(0) + "," + row(1) + "," + row(2) + "," + row(3) + "]}");
}

TEST_CASE("inspector: which addresses are loopback; the URL carries the token percent-encoded") {
    for (const char* address : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) CHECK(debug::is_loopback_address(address));
    for (const char* address : {"0.0.0.0", "10.0.0.1", "::", "128.0.0.1", "localhost.example.com", ""})
        CHECK_FALSE(debug::is_loopback_address(address));
    Guards g;
    debug::Inspector inspector(g.world, {.serve = false, .token = "a b&c=d%e/f-g_h.i~j"});
    CHECK(inspector.url() == "http://127.0.0.1:0/?token=a%20b%26c%3Dd%25e%2Ff-g_h.i~j");
}
