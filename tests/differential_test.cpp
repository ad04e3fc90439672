// The equivalence property of docs/semantics.md as a differential test: random trees over every node
// kind, random blackboard writes (between ticks and from inside actions), scripted actions that
// succeed, fail, run, suspend and get resumed; polling and event mode must produce identical
// lifecycle traces. The number of seeds comes from EBT_DIFF_SEEDS (default 2000; CI runs 50,000).
#include "support/trace_recorder.hpp"

#include <ebt/snapshot.hpp>

#include <array>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

constexpr int kKeys = 5;
constexpr int kTicks = 60;
const char* const kKeyNames[kKeys] = {"k0", "k1", "k2", "k3", "k4"};

// ---- coverage bookkeeping -----------------------------------------------------------------------------

struct Coverage {
    std::map<std::string, long> counts;
    void hit(const std::string& what, long n = 1) { counts[what] += n; }
};

// ---- the per-agent harness that scripted actions talk to -----------------------------------------------

struct PendingResume {
    ResumeHandle handle;
    std::uint64_t due_tick;
    Status status;
    bool by_callback;  // resumed by a Resumer action during a tick, not by the harness between ticks
};

struct Harness {
    std::vector<PendingResume> pending;
    long resumed = 0, stale = 0, resumed_inside = 0, writes_in_action = 0;
    /// Every update call as its action saw it (node, tick, clock, dt, its count, the agent's stats):
    /// a record that needs no trace listener (the World-stepped differential below).
    std::vector<std::string> calls;

    void resume_due(Agent& agent, std::uint64_t tick, bool inside) {
        for (std::size_t i = 0; i < pending.size();) {
            if (pending[i].due_tick <= tick && pending[i].by_callback == inside) {
                if (agent.resume(pending[i].handle, pending[i].status)) {
                    ++resumed;
                    if (inside) ++resumed_inside;
                } else {
                    ++stale;
                }
                pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
    }
};

std::map<std::uint64_t, Harness*>& harnesses() {
    static std::map<std::uint64_t, Harness*> map;
    return map;
}
Harness& harness_of(const Agent& agent) { return *harnesses().at(agent.serial()); }

/// What one scripted action use does in each of its runs.
struct Script {
    enum Kind { Finish, Forever, Suspend, Resumer } kind = Finish;
    int updates = 1;                  // Finish: returns `result` on this update; Suspend: resumed after this many ticks
    Status result = Status::Success;
    int write_key = -1;               // write this key on update `write_at` ...
    int write_at = 1;
    bool write_value = true;
    bool toggle = false;              // ... or flip it on every update
    int terminate_write_key = -1;     // ... and/or this one in onTerminate
    bool resumed_by_callback = false;  // Suspend: who resumes it
};

ActionSpec scripted(const Script& script) {
    ActionSpec spec;
    spec.memory_bytes = sizeof(int);
    spec.update = [script](ActionContext& ctx) -> Status {
        int& n = ctx.memory<int>();
        ++n;
        Harness& h = harness_of(ctx.agent());
        const AgentStats& st = ctx.agent().stats();
        h.calls.push_back(std::to_string(ctx.node()) + " tick " + std::to_string(ctx.tick()) + " now " +
                          std::to_string(ctx.now()) + " dt " + std::to_string(ctx.dt().count()) + " n " + std::to_string(n) +
                          " visited " + std::to_string(st.nodes_visited) + " updates " + std::to_string(st.updates));
        if (script.write_key >= 0 && script.toggle) {
            ctx.blackboard().set(kKeyNames[script.write_key], !ctx.blackboard().get<bool>(kKeyNames[script.write_key]));
            ++h.writes_in_action;
        } else if (script.write_key >= 0 && n == script.write_at) {
            ctx.blackboard().set(kKeyNames[script.write_key], script.write_value);
            ++h.writes_in_action;
        }
        switch (script.kind) {
        case Script::Finish: return n >= script.updates ? script.result : Status::Running;
        case Script::Forever: return Status::Running;
        case Script::Suspend:
            if (n == 1) h.pending.push_back({ctx.suspend(), ctx.tick() + static_cast<std::uint64_t>(script.updates), script.result,
                                    script.resumed_by_callback});
            return Status::Running;
        case Script::Resumer:
            h.resume_due(ctx.agent(), ctx.tick(), true);
            return n >= script.updates ? script.result : Status::Running;
        }
        return Status::Failure;
    };
    if (script.terminate_write_key >= 0) {
        const int key = script.terminate_write_key;
        spec.on_terminate = [key](ActionContext& ctx, Status s) {
            ctx.blackboard().set(kKeyNames[key], s == Status::Success);
            ++harness_of(ctx.agent()).writes_in_action;
        };
    }
    return spec;
}

// ---- random tree generator --------------------------------------------------------------------------------

struct Generator {
    std::mt19937_64 rng;
    Coverage& cov;
    Registry& registry;
    int budget = 40;
    int action_count = 0;
    int forced_guard_key = -1;  // the next node gets a Self precondition on this key (a race's guarded child)

    int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
    bool chance(int percent) { return pick(100) < percent; }
    std::string key() { return kKeyNames[pick(kKeys)]; }
    Duration duration() { return Duration(50'000 * pick(6)); }  // 0 .. 250 ms in 50 ms steps

    Predicate predicate(int depth) {
        const int k = depth > 1 ? pick(3) : pick(9);
        switch (k) {
        case 0: cov.hit("pred:is"); return Predicate::is(key(), chance(70));
        case 1: cov.hit("pred:condition"); return Predicate::condition("IsSet", {{"flag", key()}});
        case 2: cov.hit("pred:constant"); return Predicate::constant(chance(80));
        case 3: cov.hit("pred:not"); return !predicate(depth + 1);
        case 4:
        case 5: cov.hit("pred:and"); return predicate(depth + 1) && predicate(depth + 1);
        case 6:
        case 7: cov.hit("pred:or"); return predicate(depth + 1) || predicate(depth + 1);
        default: cov.hit("pred:xor"); return predicate(depth + 1) ^ predicate(depth + 1);
        }
    }

    void condition_leaf(TreeBuilder& b) {
        switch (pick(4)) {
        case 0: b.check(key(), chance(60)); break;
        case 1: b.condition("IsSet", {{"flag", key()}}); break;
        case 2: b.condition(predicate(1)); break;
        default:
            cov.hit("folded decorator");
            switch (pick(3)) {
            case 0: b.inverter(); break;
            case 1: b.force_success(); break;
            default: b.force_failure(); break;
            }
            b.check(key());
            b.back();
        }
        cov.hit("condition leaf");
    }

    void action_leaf(TreeBuilder& b) {
        Script s;
        const int kind = pick(10);
        s.kind = kind < 6 ? Script::Finish : kind < 7 ? Script::Forever : kind < 9 ? Script::Suspend : Script::Resumer;
        s.updates = 1 + pick(4);
        s.result = chance(65) ? Status::Success : Status::Failure;
        s.resumed_by_callback = chance(40);
        if (chance(30)) {
            s.write_key = pick(kKeys);
            s.write_at = 1 + pick(3);
            s.write_value = chance(50);
        }
        if (chance(15)) s.terminate_write_key = pick(kKeys);
        b.action("A" + std::to_string(action_count++), scripted(s));
        cov.hit(std::string("script:") + (s.kind == Script::Finish ? "finish" : s.kind == Script::Forever ? "forever"
                                                                              : s.kind == Script::Suspend ? "suspend" : "resumer"));
    }

    // Whether `kind` accepts an explicit LowerPriority abort on its children.
    static bool has_lower_siblings(NodeKind parent) {
        return parent == NodeKind::Selector || parent == NodeKind::ActiveSelector ||
               parent == NodeKind::PrioritySelector || parent == NodeKind::NonPrioritySelector;
    }

    void maybe_guard_modifiers(TreeBuilder& b, bool guarded, NodeKind parent) {
        if (forced_guard_key >= 0) {
            b.precondition(Predicate::is(kKeyNames[forced_guard_key], chance(50))).abort(AbortMode::Self);
            forced_guard_key = -1;
            cov.hit("race: Self precondition");
            return;
        }
        bool has_guard = guarded;
        if (chance(20)) {
            b.precondition(predicate(0));
            cov.hit("precondition");
            has_guard = true;
        }
        if (has_guard && chance(40)) {
            AbortMode modes[4] = {AbortMode::None, AbortMode::Self, AbortMode::LowerPriority, AbortMode::Both};
            AbortMode m = modes[pick(4)];
            if (!has_lower_siblings(parent) && (m == AbortMode::LowerPriority || m == AbortMode::Both)) m = AbortMode::Self;
            b.abort(m);
            cov.hit(std::string("abort:") + to_string(m));
        }
    }

    // A Parallel or Monitor whose first child keeps writing a key that the Self guards of its later
    // children read (a Monitor's conditions, a ReactiveSequence's leading condition, a precondition):
    // the write happens in the tick, before the walk reaches the guarded child, which must react at
    // its own position in the same tick (docs/semantics.md, "Position").
    void race(TreeBuilder& b, int depth) {
        const int key = pick(kKeys);
        const bool monitor = chance(35);
        if (monitor) {
            b.monitor(chance(50) ? Policy::RequireOne : Policy::RequireAll, chance(50) ? Policy::RequireOne : Policy::RequireAll);
            b.check(kKeyNames[key], chance(50));  // the Monitor's own guard reads the raced key too
        } else {
            b.parallel(chance(50) ? Policy::RequireOne : Policy::RequireAll, chance(50) ? Policy::RequireOne : Policy::RequireAll);
        }
        cov.hit(monitor ? "race: Monitor" : "race: Parallel");
        Script w;
        w.kind = chance(60) ? Script::Forever : Script::Finish;
        w.updates = 2 + pick(4);
        w.result = chance(65) ? Status::Success : Status::Failure;
        w.write_key = key;
        w.toggle = chance(50);
        w.write_at = 1 + pick(3);
        w.write_value = chance(50);
        b.action("A" + std::to_string(action_count++), scripted(w));
        cov.hit(w.toggle ? "race: toggling writer" : "race: writer");
        const int guarded = 1 + pick(3);
        for (int i = 0; i < guarded; ++i) {
            if (chance(25)) node(b, depth + 1, NodeKind::Parallel);  // something else in between
            switch (pick(4)) {
            case 0:
                b.monitor(chance(50) ? Policy::RequireOne : Policy::RequireAll, chance(50) ? Policy::RequireOne : Policy::RequireAll);
                b.check(kKeyNames[key], chance(50));
                action_leaf(b);
                if (chance(50)) node(b, depth + 1, NodeKind::Monitor);
                b.back();
                cov.hit("race: guarded Monitor");
                break;
            case 1:
                b.reactive_sequence();
                b.check(kKeyNames[key], chance(50));
                node(b, depth + 1, NodeKind::ReactiveSequence);
                b.back();
                cov.hit("race: guarded ReactiveSequence");
                break;
            default:
                forced_guard_key = key;
                node(b, depth + 1, NodeKind::Parallel);
                forced_guard_key = -1;
                break;
            }
        }
        b.back();
    }

    void node(TreeBuilder& b, int depth, NodeKind parent) {
        --budget;
        const bool forced = forced_guard_key >= 0;  // must be a node that takes a precondition
        if (!forced && depth < 5 && budget > 8 && chance(4)) {
            race(b, depth);
            return;
        }
        const bool leaf = depth >= 6 || budget <= 0 || chance(depth == 0 ? 0 : 30);
        if (leaf) {
            int k = pick(10);
            if (forced && (k == 5 || k == 6)) k = 0;  // a condition leaf takes no precondition
            if (k < 5) {
                action_leaf(b);
                maybe_guard_modifiers(b, false, parent);
            } else if (k < 7) {
                condition_leaf(b);
            } else if (k < 8) {
                chance(50) ? b.always_success() : b.always_failure();
                maybe_guard_modifiers(b, false, parent);
            } else {
                b.wait(duration());
                maybe_guard_modifiers(b, false, parent);
            }
            return;
        }
        const int k = pick(24);
        if (k < 9) {
            // decorators
            NodeKind kind;
            switch (k) {
            case 0: b.inverter(); kind = NodeKind::Inverter; break;
            case 1: chance(50) ? b.force_success() : b.force_failure(); kind = NodeKind::ForceSuccess; break;
            case 2: b.repeat(chance(30) ? kForever : 1 + pick(3)); kind = NodeKind::Repeat; break;
            case 3: b.retry(1 + pick(3)); kind = NodeKind::Retry; break;
            case 4: b.loop(chance(30) ? kForever : 1 + pick(3)); kind = NodeKind::Loop; break;
            case 5: b.cooldown(duration()); kind = NodeKind::Cooldown; break;
            case 6: b.timeout(duration()); kind = NodeKind::Timeout; break;
            default: b.delay(duration()); kind = NodeKind::Delay; break;
            }
            maybe_guard_modifiers(b, kind == NodeKind::Cooldown, parent);
            node(b, depth + 1, kind);
            b.back();
            return;
        }
        // composites
        const int children = 1 + pick(4);
        NodeKind kind;
        int leading = 0;
        switch (k) {
        case 9: b.sequence(); kind = NodeKind::Sequence; leading = pick(3); break;
        case 10: b.filter(); kind = NodeKind::Filter; leading = 1 + pick(2); break;
        case 11: b.reactive_sequence(); kind = NodeKind::ReactiveSequence; leading = pick(2); break;
        case 12: b.selector(); kind = NodeKind::Selector; break;
        case 13:
        case 14:
        case 15: b.active_selector(); kind = NodeKind::ActiveSelector; break;
        case 16: b.priority_selector(); kind = NodeKind::PrioritySelector; break;
        case 17: b.non_priority_selector(); kind = NodeKind::NonPrioritySelector; break;
        case 18: b.random_selector(); kind = NodeKind::RandomSelector; break;
        case 19: {
            std::vector<double> w;
            for (int i = 0; i < children; ++i) w.push_back(0.5 + pick(4));
            b.weighted_selector(w);
            kind = NodeKind::WeightedSelector;
            break;
        }
        case 20:
        case 21: {
            const int s = 1 + pick(children), f = 1 + pick(children);
            if (chance(50)) b.parallel(s, f);
            else b.parallel(chance(50) ? Policy::RequireOne : Policy::RequireAll, chance(50) ? Policy::RequireOne : Policy::RequireAll);
            kind = NodeKind::Parallel;
            break;
        }
        default:
            b.monitor(chance(50) ? Policy::RequireOne : Policy::RequireAll, chance(50) ? Policy::RequireOne : Policy::RequireAll);
            kind = NodeKind::Monitor;
            leading = 1 + pick(2);
            break;
        }
        maybe_guard_modifiers(b, leading > 0, parent);
        for (int i = 0; i < leading; ++i) {
            condition_leaf(b);
            cov.hit(kind == NodeKind::Monitor ? "monitor condition" : "leading condition");
        }
        if (kind == NodeKind::Monitor) action_leaf(b);  // a monitor needs one child that is not a condition
        for (int i = 0; i < children; ++i) {
            if (kind == NodeKind::ReactiveSequence && i > 0 && chance(40)) {
                condition_leaf(b);
                cov.hit("reactive condition after a child");
            }
            node(b, depth + 1, kind);
        }
        b.back();
    }
};

struct RunResult {
    std::vector<std::string> trace;
    std::vector<std::string> all;  // with guard evaluations, for debugging
    AgentStats stats;
    Harness harness;
};

struct WriteScript {
    // per tick: list of (key, value) written before the tick
    std::vector<std::vector<std::pair<int, bool>>> writes;
};

/// One run of the script. With `listen` (the default) a trace recorder listens, and the trace is the
/// result; without, nothing listens, so that event mode may take its short paths for a completed move
/// (docs/semantics.md, "A completed move"). With `states`, the agent's snapshot after each tick is kept.
RunResult run(const Tree& tree, Mode mode, std::uint64_t seed, const WriteScript& script, bool listen = true,
              std::vector<std::vector<std::byte>>* states = nullptr) {
    RunResult out;
    test::TraceRecorder rec;
    Agent agent(tree, {.mode = mode, .seed = seed, .listener = listen ? &rec : nullptr});
    harnesses()[agent.serial()] = &out.harness;
    for (int tick = 0; tick < kTicks; ++tick) {
        for (auto [k, v] : script.writes[static_cast<std::size_t>(tick)]) agent.blackboard().set(kKeyNames[k], v);
        out.harness.resume_due(agent, static_cast<std::uint64_t>(tick), false);
        agent.tick(100ms);
        if (states) states->push_back(save_agent(agent));
    }
    harnesses().erase(agent.serial());
    out.trace = rec.lifecycle();
    for (const auto& en : rec.entries) out.all.push_back(std::to_string(en.event.tick) + " " + test::TraceRecorder::render(en.event));
    out.stats = agent.stats();
    return out;
}

// EBT_DIFF_SEED=N runs only seed N (to debug a failure).
long only_seed() {
    if (const char* env = std::getenv("EBT_DIFF_SEED")) return std::atol(env);
    return 0;
}

long seeds_to_run() {
    if (const char* env = std::getenv("EBT_DIFF_SEEDS")) return std::max(1L, std::atol(env));
    return 2000;
}

}  // namespace

TEST_CASE("differential: polling and event mode produce identical traces on random trees") {
    const long seeds = seeds_to_run();
    Coverage cov;
    Registry registry;
    registry.add_condition("IsSet", [](const ConditionContext& c) { return c.in<bool>(0); }, {port<bool>("flag")});
    long poll_guards = 0, event_guards = 0, poll_visits = 0, event_visits = 0, aborted = 0;

    for (long seed = only_seed() ? only_seed() : 1; seed <= (only_seed() ? only_seed() : seeds); ++seed) {
        Generator gen{std::mt19937_64(static_cast<std::uint64_t>(seed)), cov, registry};
        TreeBuilder b("random-" + std::to_string(seed), registry);
        for (int k = 0; k < kKeys; ++k) b.key<bool>(kKeyNames[k], gen.chance(50));
        gen.node(b, 0, NodeKind::Action);
        Tree tree = b.end();
        for (NodeIndex i = 0; i < tree.size(); ++i) cov.hit(std::string("kind:") + to_string(tree.kind(i)));

        WriteScript script;
        script.writes.resize(kTicks);
        for (auto& w : script.writes)
            while (gen.chance(35)) w.emplace_back(gen.pick(kKeys), gen.chance(50));

        RunResult poll = run(tree, Mode::Polling, static_cast<std::uint64_t>(seed), script);
        std::vector<std::vector<std::byte>> event_states, quiet_states;
        RunResult event = run(tree, Mode::Event, static_cast<std::uint64_t>(seed), script, true, &event_states);
        // Event mode without a listener takes the short paths of a completed move where they apply:
        // it must reach exactly the same state after every tick as with one (the general path).
        run(tree, Mode::Event, static_cast<std::uint64_t>(seed), script, false, &quiet_states);
        for (std::size_t t = 0; t < event_states.size(); ++t) {
            if (event_states[t] == quiet_states[t]) continue;
            FAIL("seed " << seed << ": event mode without a listener has another state after tick " << t
                         << " than with one\ntree:\n" << tree.describe());
        }

        if (poll.trace != event.trace) {
            std::size_t i = 0;
            while (i < poll.trace.size() && i < event.trace.size() && poll.trace[i] == event.trace[i]) ++i;
            std::ostringstream msg;
            msg << "seed " << seed << ": traces differ at event " << i << "\n  polling: "
                << (i < poll.trace.size() ? poll.trace[i] : "<end>") << "\n  event:   "
                << (i < event.trace.size() ? event.trace[i] : "<end>") << "\n  preceding events:";
            for (std::size_t k = i > 12 ? i - 12 : 0; k < i; ++k) msg << "\n    " << poll.trace[k];
            msg << "\n  writes before each tick:";
            for (int t = 0; t < kTicks; ++t)
                for (auto [k, v] : script.writes[static_cast<std::size_t>(t)]) msg << " t" << t << ":" << kKeyNames[k] << "=" << v;
            msg << "\ntree:\n" << tree.describe();
            if (only_seed()) {
                msg << "\nfull polling trace:";
                for (auto& e : poll.all) msg << "\n  " << e;
                msg << "\nfull event trace:";
                for (auto& e : event.all) msg << "\n  " << e;
            }
            FAIL(msg.str());
        }
        poll_guards += poll.stats.guards_evaluated;
        event_guards += event.stats.guards_evaluated;
        poll_visits += poll.stats.nodes_visited;
        event_visits += event.stats.nodes_visited;
        for (const auto& e : poll.trace)
            if (e.find("T(Aborted)") != std::string::npos) ++aborted;
        cov.hit("resume (between ticks)", poll.harness.resumed - poll.harness.resumed_inside);
        cov.hit("resume (inside an action)", poll.harness.resumed_inside);
        cov.hit("stale resume handle", poll.harness.stale);
        cov.hit("write inside an action", poll.harness.writes_in_action);
        cov.hit("timer fired", poll.stats.timers_fired);
        for (auto& w : script.writes) cov.hit("write between ticks", static_cast<long>(w.size()));
    }
    cov.hit("aborted node", aborted);

    MESSAGE("differential: " << seeds << " seeds x " << kTicks << " ticks; guards evaluated poll " << poll_guards
                             << " / event " << event_guards << "; nodes visited poll " << poll_visits << " / event "
                             << event_visits);
    std::ostringstream report;
    for (const auto& [what, n] : cov.counts) report << "  " << what << ": " << n << "\n";
    MESSAGE("coverage:\n" << report.str());

    const char* required[] = {
        "kind:Action", "kind:Condition", "kind:AlwaysSuccess", "kind:AlwaysFailure", "kind:Wait", "kind:Inverter",
        "kind:ForceSuccess", "kind:ForceFailure", "kind:Repeat", "kind:Retry", "kind:Loop", "kind:Cooldown",
        "kind:Timeout", "kind:Delay", "kind:Sequence", "kind:Filter", "kind:ReactiveSequence", "kind:Selector",
        "kind:ActiveSelector", "kind:PrioritySelector", "kind:NonPrioritySelector", "kind:RandomSelector",
        "kind:WeightedSelector", "kind:Parallel", "kind:Monitor", "precondition", "abort:None", "abort:Self",
        "abort:LowerPriority", "abort:Both", "pred:is", "pred:condition", "pred:constant", "pred:not", "pred:and",
        "pred:or", "pred:xor", "folded decorator", "leading condition", "monitor condition",
        "reactive condition after a child", "race: Monitor", "race: Parallel", "race: writer", "race: toggling writer",
        "race: guarded Monitor", "race: guarded ReactiveSequence", "race: Self precondition", "script:finish", "script:forever", "script:suspend", "script:resumer",
        "resume (between ticks)", "resume (inside an action)", "write inside an action", "write between ticks",
        "timer fired", "aborted node"};
    for (const char* r : required) {
        CAPTURE(std::string(r));
        CHECK(cov.counts[r] > 0);
    }
}

// The same random trees stepped by Worlds (issue 13's lean path of a World's quiet tick, Runtime::world_tick,
// is taken only by an event-mode agent without a trace listener): three Worlds run the same agents
// frame by frame: event mode without listeners (the lean path wherever it applies), event mode with a
// listener on each agent (every tick on the general path), and polling mode with listeners. Two agents
// per World, one ticked every frame and one every second frame (LOD: its dt accumulates). Compared:
// every frame's FrameMetrics, every node's status, stats, clock, tick count, next deadline and
// blackboard of the two event Worlds, each update call as the action saw it, and a snapshot of each
// agent every 10 frames; the lifecycle traces of event and polling mode through a World.
namespace {

struct WorldRun {
    std::vector<test::TraceRecorder> recorders = std::vector<test::TraceRecorder>(2);
    std::vector<Harness> harnesses = std::vector<Harness>(2);
    std::vector<std::string> frames;  // per frame: metrics and every agent's observable state
    World world;                      // (destroyed first: its agents use the recorders)
    std::vector<AgentHandle> agents;

    WorldRun(const Tree& tree, Mode mode, bool listen, std::uint64_t seed) {
        for (std::uint32_t i = 0; i < 2; ++i) {
            agents.push_back(world.spawn(tree, {.mode = mode, .seed = seed + i, .listener = listen ? &recorders[i] : nullptr,
                                                .tick_interval = i + 1}));
            ::harnesses()[world.at(agents[i]).serial()] = &harnesses[i];
        }
    }
    ~WorldRun() {
        for (AgentHandle h : agents) ::harnesses().erase(world.at(h).serial());
    }

    void frame(int tick, const WriteScript& script, bool snapshot) {
        for (std::uint32_t i = 0; i < 2; ++i) {
            Agent& a = world.at(agents[i]);
            for (auto [k, v] : script.writes[static_cast<std::size_t>(tick)]) a.blackboard().set(kKeyNames[k], v);
            harnesses[i].resume_due(a, world.frame(), false);
        }
        const FrameMetrics m = world.step(100ms);
        std::ostringstream out;
        out << "frame " << m.frame << " stepped " << m.agents_stepped << " updated " << m.behaviors_updated << " guards "
            << m.guards_evaluated << " events " << m.events_handled << " timers " << m.timers_fired << ";";
        for (AgentHandle h : agents) {
            const Agent& a = world.at(h);
            out << " [now " << a.now() << " ticks " << a.ticks() << " deadline " << a.next_deadline() << " pending "
                << a.has_pending_work() << " stats " << a.stats().nodes_visited << "/" << a.stats().guards_evaluated << "/"
                << a.stats().updates << "/" << a.stats().timers_fired << " statuses";
            for (NodeIndex n = 0; n < a.tree().size(); ++n) out << " " << static_cast<int>(a.status(n));
            out << " keys";
            for (const char* key : kKeyNames) out << " " << a.blackboard().get<bool>(key);
            if (snapshot) {
                out << " snapshot";
                for (std::byte byte : save_agent(a)) out << " " << static_cast<int>(byte);
            }
            out << "]";
        }
        frames.push_back(out.str());
    }
};

}  // namespace

TEST_CASE("differential: a World's lean quiet tick changes nothing the general path would not (random trees, both modes)") {
    const long seeds = seeds_to_run() / 4;
    Coverage cov;
    Registry registry;
    registry.add_condition("IsSet", [](const ConditionContext& c) { return c.in<bool>(0); }, {port<bool>("flag")});
    long quiet_ticks = 0;
    for (long seed = only_seed() ? only_seed() : 1; seed <= (only_seed() ? only_seed() : seeds); ++seed) {
        Generator gen{std::mt19937_64(static_cast<std::uint64_t>(seed)), cov, registry};
        TreeBuilder b("random-" + std::to_string(seed), registry);
        for (int k = 0; k < kKeys; ++k) b.key<bool>(kKeyNames[k], gen.chance(50));
        gen.node(b, 0, NodeKind::Action);
        const Tree tree = b.end();
        WriteScript script;
        script.writes.resize(kTicks);
        for (auto& w : script.writes)
            while (gen.chance(20)) w.emplace_back(gen.pick(kKeys), gen.chance(50));

        WorldRun lean(tree, Mode::Event, false, static_cast<std::uint64_t>(seed));
        WorldRun general(tree, Mode::Event, true, static_cast<std::uint64_t>(seed));
        WorldRun polling(tree, Mode::Polling, true, static_cast<std::uint64_t>(seed));
        for (int tick = 0; tick < kTicks; ++tick) {
            const bool snapshot = tick % 10 == 9;
            lean.frame(tick, script, snapshot);
            general.frame(tick, script, snapshot);
            polling.frame(tick, script, false);
            CAPTURE(seed);
            CAPTURE(tick);
            REQUIRE(lean.frames.back() == general.frames.back());
        }
        for (std::size_t i = 0; i < 2; ++i) {
            CAPTURE(seed);
            CAPTURE(i);
            REQUIRE(lean.harnesses[i].calls == general.harnesses[i].calls);
            REQUIRE(general.recorders[i].lifecycle() == polling.recorders[i].lifecycle());
            // Ticks of the general run whose only event was one Running update: the lean path's ticks.
            std::map<std::uint64_t, std::vector<const TraceEvent*>> by_tick;
            for (const auto& en : general.recorders[i].entries) by_tick[en.event.tick].push_back(&en.event);
            for (const auto& [t, events] : by_tick)
                if (events.size() == 1 && events[0]->kind == TraceKind::Update && events[0]->status == Status::Running) ++quiet_ticks;
        }
    }
    MESSAGE("World-stepped differential: " << seeds << " seeds x " << kTicks << " frames; quiet ticks " << quiet_ticks);
    CHECK(quiet_ticks > seeds);
}
