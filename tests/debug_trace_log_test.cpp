// Trace logs (<ebt/debug/trace_log.hpp>): a log of a known run read back event for event, the
// reader's filters, its printed and JSON Lines forms, its errors on files of another kind or version
// and on logs cut short, write failures, and that logging does not change the run.
#include "support/trace_recorder.hpp"

#include <ebt/debug/trace_log.hpp>
#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace ebt::debug;
using namespace std::chrono_literals;

namespace trace_log_test {

struct Vec2 {
    float x = 0;
    float y = 0;
    friend bool operator==(const Vec2&, const Vec2&) = default;
};

/// The README's guard with a jammed gun: the guard patrols; when it sees an enemy it attacks; Attack
/// throws on its update while `jammed` is true. Keys of three types, one a user struct.
struct Guards {
    Registry registry;
    Tree tree;
    Guards() {
        registry.add_action("Patrol", [](ActionContext&) { return Status::Running; });
        ActionSpec attack;
        attack.ports = {port<bool>("jammed")};
        attack.update = [](ActionContext& ctx) {
            if (ctx.in<bool>("jammed")) throw std::runtime_error("gun jammed");
            return Status::Running;
        };
        registry.add_action("Attack", std::move(attack));
        tree = TreeBuilder("guard", registry)
                   .key<bool>("enemy_seen")
                   .key<bool>("jammed")
                   .key<int>("hp", 100)
                   .key<Vec2>("target")
                   .active_selector()
                   .sequence()
                   .label("engage")
                   .check("enemy_seen")
                   .action("Attack")
                   .back()
                   .action("Patrol")
                   .back()
                   .end();
    }
};

/// Runs two guards for 5 frames: guard b sees an enemy before frame 2, its gun jams in frame 3, its hp
/// and target change before frame 4. Each agent also has a TraceRecorder of its own.
struct Run {
    Guards guards;
    World world;
    test::TraceRecorder rec_a, rec_b;
    AgentHandle a, b;
    explicit Run(Mode mode = Mode::Event) {
        a = world.spawn(guards.tree, {.mode = mode, .listener = &rec_a});
        b = world.spawn(guards.tree, {.mode = mode, .listener = &rec_b});
    }
    /// Frames after the fifth only step.
    void play(int frames = 5) {
        for (int frame = 0; frame < frames; ++frame) {
            if (frame == 2) world.at(b).blackboard().set("enemy_seen", true);
            if (frame == 3) world.at(b).blackboard().set("jammed", true);
            if (frame == 4) {
                world.at(b).blackboard().set("hp", 75);
                world.at(b).blackboard().set("target", Vec2{1, 2});
                world.at(b).blackboard().set("jammed", false);
            }
            world.step(50ms);
        }
    }
};

std::vector<std::byte> logged_bytes(Run& run, TraceLogOptions options = {}, int frames = 5) {
    TraceLogWriter log(std::move(options));
    log.attach(run.world);
    run.play(frames);
    log.close();
    return log.memory();
}

/// The recorder's events in the reader's terms.
std::vector<TraceRecord> expected_events(const test::TraceRecorder& rec, AgentHandle handle) {
    std::vector<TraceRecord> out;
    for (const auto& en : rec.entries) {
        TraceRecord r;
        r.tick = en.event.tick;
        r.agent = handle;
        r.kind = static_cast<LogKind>(en.event.kind);
        r.node = en.event.node;
        if (en.event.kind == TraceKind::Update || en.event.kind == TraceKind::Terminate) r.status = en.event.status;
        if (en.event.kind == TraceKind::GuardEvaluated || en.event.kind == TraceKind::ConditionEvaluated) r.result = en.event.result;
        if (en.event.kind == TraceKind::Error) r.text = en.message;
        out.push_back(r);
    }
    return out;
}

std::string describe(const TraceRecord& r) {
    return std::to_string(r.tick) + " " + std::to_string(r.agent.index) + ":" + std::to_string(r.agent.generation) + " " +
           to_string(r.kind) + " n" + std::to_string(r.node) + " " + to_string(r.status) + " " + (r.result ? "1" : "0") +
           " k" + std::to_string(r.key) + " '" + r.text + "'";
}

std::vector<std::string> describe(const std::vector<TraceRecord>& records) {
    std::vector<std::string> out;
    for (const auto& r : records) out.push_back(describe(r));
    return out;
}

std::string open_error(std::vector<std::byte> bytes) {
    try {
        TraceLogReader reader(std::move(bytes), "run.ebtlog");
    } catch (const FileFormatError& e) {
        return e.what();
    }
    return "no error";
}

std::vector<std::string> lines(TraceLogReader& reader, const TraceFilter& filter, bool json) {
    std::vector<std::string> out;
    for (TraceRecord r; reader.next(r, filter);) out.push_back(json ? reader.json(r) : reader.format(r));
    return out;
}

}  // namespace trace_log_test

using namespace trace_log_test;

TEST_CASE("trace log: a log of a world read back holds exactly the events its agents' recorders saw, in both modes") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run run(mode);
        TraceLogReader reader(logged_bytes(run), "run.ebtlog");
        CHECK(reader.damage() == "");
        CHECK_FALSE(reader.truncated());
        CHECK(reader.version() == 1);

        TraceFilter events;
        events.kinds &= ~TraceFilter::kind_bit(LogKind::BlackboardChange);
        const std::vector<TraceRecord> all = reader.read_all(events);
        std::vector<TraceRecord> of_a, of_b;
        for (const auto& r : all) (r.agent == run.a ? of_a : of_b).push_back(r);
        CHECK(of_a.size() + of_b.size() == all.size());
        CHECK(describe(of_a) == describe(expected_events(run.rec_a, run.a)));
        CHECK(describe(of_b) == describe(expected_events(run.rec_b, run.b)));
        // The run did what the test means it to: b attacked, and its jammed gun is an Error event.
        CHECK(run.rec_b.errors() == std::vector<std::string>{"3: gun jammed"});

        REQUIRE(reader.trees().size() == 1);
        const LoggedTree& tree = reader.trees()[0];
        CHECK(tree.name == "guard");
        REQUIRE(tree.nodes.size() == run.guards.tree.size());
        for (NodeIndex i = 0; i < tree.nodes.size(); ++i) {
            CHECK(tree.nodes[i].path == run.guards.tree.path(i));
            CHECK(tree.nodes[i].kind == run.guards.tree.kind(i));
        }
        REQUIRE(tree.keys.size() == 4);
        CHECK(tree.keys[3].name == "target");
        CHECK(tree.keys[3].type == std::string(type_of<Vec2>()->name));
    }
}

TEST_CASE("trace log: blackboard changes are logged with the frame they are seen in and the value as text") {
    Run run;
    TraceLogReader reader(logged_bytes(run), "run.ebtlog");
    TraceFilter changes;
    changes.kinds = TraceFilter::kind_bit(LogKind::BlackboardChange);
    CHECK(lines(reader, changes, false) == std::vector<std::string>{
                                               "2 1:1 change enemy_seen = true",
                                               "3 1:1 change jammed = true",
                                               "4 1:1 change hp = 75",
                                               "4 1:1 change target = <trace_log_test::Vec2>",
                                               "4 1:1 change jammed = false",
                                           });
}

TEST_CASE("trace log: only the chosen agents are logged, and without guards when asked") {
    Run run;
    TraceLogOptions options;
    options.agents = {run.b};
    options.guards = false;
    TraceLogReader reader(logged_bytes(run, options), "run.ebtlog");
    const std::vector<TraceRecord> all = reader.read_all();
    std::vector<TraceRecord> expected;
    for (const auto& r : expected_events(run.rec_b, run.b))
        if (r.kind != LogKind::GuardEvaluated && r.kind != LogKind::ConditionEvaluated) expected.push_back(r);
    std::vector<TraceRecord> events;
    int changes = 0;
    for (const auto& r : all) {
        CHECK(r.agent == run.b);
        if (r.kind == LogKind::BlackboardChange) ++changes;
        else events.push_back(r);
    }
    CHECK(describe(events) == describe(expected));
    CHECK(changes == 5);
}

TEST_CASE("trace log: the reader filters by agent, node path (exact or glob), tick range and kind; lines exactly") {
    Run run;
    const std::vector<std::byte> bytes = logged_bytes(run);
    const auto read = [&](const TraceFilter& f, bool json = false) {
        TraceLogReader reader(bytes, "run.ebtlog");
        return lines(reader, f, json);
    };

    TraceFilter f;
    f.agents = {run.b};
    f.first_tick = 2;
    f.last_tick = 2;
    CHECK(read(f) == std::vector<std::string>{
                         "2 1:1 change enemy_seen = true",
                         "2 1:1 guard /ActiveSelector/Sequence 'engage'[0] true",
                         "2 1:1 terminate /ActiveSelector/Action 'Patrol'[1] Aborted",
                         "2 1:1 initialize /ActiveSelector/Sequence 'engage'[0]",
                         "2 1:1 initialize /ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1]",
                         "2 1:1 update /ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1] Running",
                     });

    // A glob over a branch, every agent; kinds chosen; an index without generation keeps its slot.
    TraceFilter g;
    g.node = "/ActiveSelector/Sequence 'engage'[0]/*";
    g.kinds = TraceFilter::kind_bit(LogKind::Error) | TraceFilter::kind_bit(LogKind::Terminate);
    g.agents = {AgentHandle{1, 0}};
    CHECK(read(g) == std::vector<std::string>{
                         "3 1:1 error /ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1]: gun jammed",
                         "3 1:1 terminate /ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1] Failure",
                     });

    // An exact path; agent a never leaves Patrol.
    TraceFilter exact;
    exact.node = "/ActiveSelector/Action 'Patrol'[1]";
    exact.agents = {run.a};
    exact.last_tick = 1;
    CHECK(read(exact) == std::vector<std::string>{
                             "0 0:1 initialize /ActiveSelector/Action 'Patrol'[1]",
                             "0 0:1 update /ActiveSelector/Action 'Patrol'[1] Running",
                             "1 0:1 update /ActiveSelector/Action 'Patrol'[1] Running",
                         });
    // A node filter drops changes; no agent of that handle: nothing.
    TraceFilter none;
    none.agents = {AgentHandle{7, 1}};
    CHECK(read(none).empty());

    TraceFilter json;
    json.agents = {run.b};
    json.first_tick = 3;
    json.last_tick = 4;
    json.kinds = TraceFilter::kind_bit(LogKind::Error) | TraceFilter::kind_bit(LogKind::BlackboardChange) |
                 TraceFilter::kind_bit(LogKind::GuardEvaluated) | TraceFilter::kind_bit(LogKind::Update);
    CHECK(read(json, true) == std::vector<std::string>{
                                  R"({"tick":3,"agent":"1:1","tree":"guard","kind":"change","key":"jammed","value":"true"})",
                                  R"({"tick":3,"agent":"1:1","tree":"guard","kind":"error","node":"/ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1]","message":"gun jammed"})",
                                  R"({"tick":3,"agent":"1:1","tree":"guard","kind":"update","node":"/ActiveSelector/Sequence 'engage'[0]/Action 'Attack'[1]","status":"Failure"})",
                                  R"({"tick":3,"agent":"1:1","tree":"guard","kind":"update","node":"/ActiveSelector/Action 'Patrol'[1]","status":"Running"})",
                                  R"({"tick":4,"agent":"1:1","tree":"guard","kind":"change","key":"hp","value":"75"})",
                                  R"({"tick":4,"agent":"1:1","tree":"guard","kind":"change","key":"target","value":"<trace_log_test::Vec2>"})",
                                  R"({"tick":4,"agent":"1:1","tree":"guard","kind":"change","key":"jammed","value":"false"})",
                                  R"({"tick":4,"agent":"1:1","tree":"guard","kind":"update","node":"/ActiveSelector/Action 'Patrol'[1]","status":"Running"})",
                              });
}

TEST_CASE("trace log: node globs") {
    CHECK(path_matches("/A/B", "/A/B"));
    CHECK_FALSE(path_matches("/A/B", "/A/B/C"));
    CHECK(path_matches("/A/*", "/A/B/C"));
    CHECK(path_matches("*Patrol*", "/ActiveSelector/Action 'Patrol'[1]"));
    CHECK(path_matches("/A/?", "/A/B"));
    CHECK_FALSE(path_matches("/A/?", "/A/BC"));
    CHECK(path_matches("*", ""));
    CHECK_FALSE(path_matches("", "/A"));
}

TEST_CASE("trace log: kinds by name") {
    for (int i = 0; i < kLogKindCount; ++i) {
        const auto kind = static_cast<LogKind>(i);
        CHECK(log_kind_from_string(to_string(kind)) == kind);
    }
    CHECK(std::string(to_string(LogKind::GuardEvaluated)) == "guard");
    CHECK_FALSE(log_kind_from_string("Update").has_value());
}

TEST_CASE("trace log: a file of another kind or version is refused with a clear error") {
    Run run;
    std::vector<std::byte> bytes = logged_bytes(run);

    std::vector<std::byte> other = bytes;
    std::memcpy(other.data(), "EBTREC\0\0", 8);
    CHECK(open_error(other) == R"(run.ebtlog: byte 0: not a trace log (an ebt trace log starts with "EBTLOG"))");

    std::vector<std::byte> v2 = bytes;
    v2[8] = std::byte{2};
    CHECK(open_error(v2) == "run.ebtlog: byte 12: trace log format version 2; this build of ebt reads versions 1 to 1");

    CHECK(open_error({}) == R"(run.ebtlog: byte 0: not a trace log (an ebt trace log starts with "EBTLOG"))");
    CHECK(open_error(std::vector<std::byte>(bytes.begin(), bytes.begin() + 10)) ==
          "run.ebtlog: byte 8: truncated: the file ends inside a 32-bit integer");

    try {
        TraceLogReader reader("/nonexistent/run.ebtlog");
        FAIL("no error");
    } catch (const FileFormatError& e) {
        CHECK(std::string(e.what()) == "/nonexistent/run.ebtlog: byte 0: cannot open the file for reading");
    }
}

TEST_CASE("trace log: a log cut short still gives every record before the cut, then says where it was cut") {
    Run run;
    TraceLogOptions options;
    options.block_bytes = 256;  // many blocks
    const std::vector<std::byte> whole = logged_bytes(run, options, 200);
    TraceLogReader sound(whole, "run.ebtlog");
    const std::vector<TraceRecord> all = sound.read_all();
    REQUIRE(all.size() > 50);

    // Cut in the middle: the whole blocks before the cut are read.
    const std::size_t cut_at = whole.size() / 2;
    TraceLogReader cut(std::vector<std::byte>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut_at)), "run.ebtlog");
    CHECK(cut.truncated());
    const std::vector<TraceRecord> before = cut.read_all();
    CHECK(before.size() > 10);
    CHECK(before.size() < all.size());
    CHECK(describe(before) == describe(std::vector<TraceRecord>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(before.size()))));
    CHECK(cut.damage().find("run.ebtlog: byte ") == 0);
    CHECK(cut.damage().find(": truncated: the file ends inside a block of ") != std::string::npos);
    CHECK(cut.damage().find(" a crash while writing?)") != std::string::npos);

    // A log that was flushed but never closed (the program died): every record, and the missing end.
    std::vector<std::byte> flushed;
    {
        Run again;
        TraceLogWriter log;
        log.attach(again.world);
        again.play(200);
        log.flush();
        flushed = log.memory();
    }
    TraceLogReader unclosed(flushed, "run.ebtlog");
    CHECK(unclosed.truncated());
    CHECK(describe(unclosed.read_all()) == describe(all));
    CHECK(unclosed.damage() == "run.ebtlog: byte " + std::to_string(flushed.size()) +
                                   ": truncated: the log ends without its end block (the program writing it stopped before "
                                   "close(), or the file was cut between blocks)");
}

TEST_CASE("trace log: logging does not change the run (same state hash with and without, both modes)") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run plain(mode);
        plain.play(40);
        Run logged(mode);
        TraceLogWriter log;
        log.attach(logged.world);
        logged.play(40);
        log.close();
        CHECK(log.records() > 100);
        CHECK(logged.world.state_hash() == plain.world.state_hash());
        CHECK(logged.rec_b.lifecycle() == plain.rec_b.lifecycle());
        CHECK(logged.world.listeners().empty());  // close() detached it
    }
}

TEST_CASE("trace log: a log written to a file is read back from the file") {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "ebt_trace_log_test.ebtlog";
    Run run;
    {
        TraceLogWriter log(path.string(), {.agents = {run.a}});
        log.attach(run.world);
        run.play();
        log.close();
        CHECK(log.bytes_written() == std::filesystem::file_size(path));
    }
    TraceLogReader reader(path.string());
    CHECK(describe(reader.read_all()) == describe(expected_events(run.rec_a, run.a)));
    CHECK(reader.damage() == "");
    std::filesystem::remove(path);

    try {
        TraceLogWriter log("/nonexistent-dir/x.ebtlog");
        FAIL("no error");
    } catch (const TraceLogError& e) {
        CHECK(std::string(e.what()) == "cannot open trace log '/nonexistent-dir/x.ebtlog' for writing: No such file or directory");
    }
}

TEST_CASE("trace log: a failed disk write is reported by flush() and close(), not thrown into the game") {
    if (!std::filesystem::exists("/dev/full")) return;  // Linux: every write to /dev/full fails with ENOSPC
    Run run;
    TraceLogWriter log("/dev/full", {.block_bytes = 256});
    log.attach(run.world);
    CHECK_NOTHROW(run.play(40));  // blocks are written (and refused) during the frames
    CHECK(log.error().find("trace log '/dev/full': write failed after ") == 0);
    CHECK(log.error().find(" bytes: No space left on device") != std::string::npos);
    CHECK_THROWS_WITH_AS(log.flush(), log.error().c_str(), TraceLogError);
    CHECK_THROWS_WITH_AS(log.close(), log.error().c_str(), TraceLogError);
    CHECK(run.world.listeners().empty());
    run.world.step(50ms);  // the world goes on without it
    CHECK(run.world.at(run.a).stats().listener_errors == 0);
}

TEST_CASE("trace log: one Agent outside a World, through TraceLogAgentListener and watch(bus)") {
    Guards guards;
    ChangeBus bus;
    test::TraceRecorder rec;
    Agent agent(guards.tree, {.listener = &rec, .bus = &bus});
    TraceLogWriter log;
    TraceLogAgentListener listener(log, agent, AgentHandle{42, 7});
    log.watch(bus);
    // The recorder and the log both hear the agent: the log's listener forwards to the recorder.
    struct Both : TraceListener {
        TraceListener* first;
        TraceListener* second;
        void on_event(const TraceEvent& e) override {
            first->on_event(e);
            second->on_event(e);
        }
    } both;
    both.first = &rec;
    both.second = &listener;
    agent.set_listener(&both);
    agent.tick(50ms);
    agent.blackboard().set("enemy_seen", true);
    agent.tick(50ms);
    log.close();

    TraceLogReader reader(log.memory(), "agent.ebtlog");
    TraceFilter events;
    events.kinds &= ~TraceFilter::kind_bit(LogKind::BlackboardChange);
    CHECK(describe(reader.read_all(events)) == describe(expected_events(rec, AgentHandle{42, 7})));
    TraceLogReader again(log.memory(), "agent.ebtlog");
    TraceFilter changes;
    changes.kinds = TraceFilter::kind_bit(LogKind::BlackboardChange);
    CHECK(lines(again, changes, false) == std::vector<std::string>{"1 42:7 change enemy_seen = true"});
}

TEST_CASE("trace log: attaching twice, or from inside a frame, is refused") {
    Run run;
    TraceLogWriter log;
    log.attach(run.world);
    CHECK_THROWS_WITH_AS(log.attach(run.world), "TraceLogWriter::attach(): already attached to a World (detach() first)", UsageError);
    log.detach();
    CHECK(run.world.listeners().empty());
    log.attach(run.world);
    CHECK(run.world.listeners().size() == 1);

    // From an action, during a frame: refused; the action's exception becomes its Error event.
    Registry registry;
    World world;
    TraceLogWriter inner;
    std::string refused;
    registry.add_action("AttachLog", [&](ActionContext&) {
        try {
            inner.attach(world);
        } catch (const UsageError& e) {
            refused = e.what();
        }
        return Status::Running;
    });
    world.spawn(TreeBuilder("attacher", registry).action("AttachLog").end());
    world.step(50ms);
    CHECK(refused == "World::add_listener during a frame: add listeners between frames");
    CHECK(world.listeners().empty());
    inner.attach(world);  // between frames: fine
    CHECK(world.listeners().size() == 1);
    inner.detach();
}
