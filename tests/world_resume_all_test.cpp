// World::resume_all: a batch of resumes (a game system finishing a frame's moves) behaves exactly as
// the same resumes made one by one with World::resume: the same handles accepted, the same traces,
// the same world afterwards.
#include "support/mover_tree.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// A world of `count` agents whose tree is ActiveSelector(Sequence(check(alarm), Shout), Move) with
/// Move a latent action: each agent's latest move handle is kept by seed. Every agent has its own
/// trace recorder.
struct MoverWorld {
    Registry registry;
    std::vector<ResumeHandle> moves;
    std::vector<test::TraceRecorder> traces;
    Tree tree;
    World world;
    std::vector<AgentHandle> agents;

    MoverWorld(std::size_t count, Mode mode) : moves(count), traces(count) {
        tree = test::mover_tree(registry, moves);
        for (std::size_t i = 0; i < count; ++i)
            agents.push_back(world.spawn(tree, {.mode = mode, .seed = i, .listener = &traces[i]}));
        world.step(50ms);  // every agent starts its first move
    }
};

/// Steps both worlds `frames` frames, then checks that every agent's lifecycle trace and the worlds'
/// state hashes are the same: the batched resumes did what the one-by-one resumes did.
void step_and_compare(MoverWorld& one_by_one, MoverWorld& batched, int frames) {
    for (int frame = 0; frame < frames; ++frame) {
        one_by_one.world.step(50ms);
        batched.world.step(50ms);
    }
    for (std::size_t i = 0; i < one_by_one.traces.size(); ++i) {
        CAPTURE(i);
        CHECK(batched.traces[i].lifecycle() == one_by_one.traces[i].lifecycle());
    }
    CHECK(batched.world.state_hash() == one_by_one.world.state_hash());
}

/// Runs `body(one_by_one, batched, length)` for each of `lengths` in both modes, each time on two fresh
/// MoverWorlds of `agents` agents: one to be resumed handle by handle, one with resume_all.
template <class Body>
void for_each_mode_and_length(std::size_t agents, const std::vector<std::size_t>& lengths, Body body) {
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        for (const std::size_t length : lengths) {
            CAPTURE(mode == Mode::Event ? "event" : "polling");
            CAPTURE(length);
            MoverWorld one_by_one(agents, mode);
            MoverWorld batched(agents, mode);
            body(one_by_one, batched, length);
        }
    }
}

/// Resumes `first` in `one_by_one` handle by handle (World::resume) and `second` in `batched` with one
/// World::resume_all, checks that both accepted as many handles, and returns that count.
std::size_t resume_both(MoverWorld& one_by_one, const std::vector<ResumeHandle>& first, MoverWorld& batched,
                        const std::vector<ResumeHandle>& second, Status status) {
    std::size_t accepted = 0;
    for (const ResumeHandle& h : first) accepted += one_by_one.world.resume(h, status) ? 1 : 0;
    CHECK(batched.world.resume_all(second, status) == accepted);
    return accepted;
}

}  // namespace

TEST_CASE("world: resume_all accepts, refuses and traces exactly as resume called once per handle") {
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(mode == Mode::Event ? "event" : "polling");
        constexpr std::size_t kAgents = 40;
        MoverWorld one_by_one(kAgents, mode);
        MoverWorld batched(kAgents, mode);
        MoverWorld other(1, mode);  // a handle of another world's agent in slot 0 is refused by both

        // The same list for both worlds: every third agent's move (in an order unlike slot order), a
        // move resumed twice (the second is refused), a despawned agent's move, and a foreign handle.
        const auto handles_of = [&](MoverWorld& w) {
            std::vector<ResumeHandle> list;
            for (std::size_t i = kAgents; i-- > 0;)
                if (i % 3 == 0) list.push_back(w.moves[i]);
            list.push_back(w.moves[9]);
            list.push_back(w.moves[10]);
            list.push_back(other.moves[0]);
            return list;
        };
        for (MoverWorld* w : {&one_by_one, &batched}) CHECK(w->world.despawn(w->agents[10]));
        const std::vector<ResumeHandle> first = handles_of(one_by_one);
        const std::vector<ResumeHandle> second = handles_of(batched);

        std::size_t accepted = 0;
        std::vector<bool> each;
        for (const ResumeHandle& h : first) {
            each.push_back(one_by_one.world.resume(h, Status::Success));
            accepted += each.back() ? 1 : 0;
        }
        CHECK(accepted == 14);  // agents 0, 3, ..., 39; not 9 twice, not the despawned 10, not the foreign one
        CHECK(each[14] == false);  // 9 again
        CHECK(batched.world.resume_all(second, Status::Success) == accepted);

        step_and_compare(one_by_one, batched, 3);
        // Agent 3's move (node 4) ended in the frame after the resume, and the root began its next move in
        // the frame after that.
        CHECK(one_by_one.traces[3].tick(1) == "4:T(Success) 0:T(Success)");
        CHECK(one_by_one.traces[3].tick(2) == "0:I 4:I");
        CHECK(one_by_one.traces[9].tick(1) == "4:T(Success) 0:T(Success)");  // once
        CHECK(one_by_one.traces[4].tick(1).empty());  // not resumed: still moving
    }
}

TEST_CASE("world: resume_all refuses a status other than Success or Failure and resumes nothing") {
    MoverWorld w(4, Mode::Event);
    const std::vector<ResumeHandle> list(w.moves.begin(), w.moves.end());
    CHECK_THROWS_WITH_AS(w.world.resume_all(list, Status::Running), "World::resume_all() needs Success or Failure, got Running",
                         UsageError);
    // Nothing was resumed: every handle is still good, once.
    CHECK(w.world.resume_all(list, Status::Failure) == 4);
    CHECK(w.world.resume_all(list, Status::Failure) == 0);
    w.world.step(50ms);
    CHECK(w.traces[2].tick(1) == "4:T(Failure) 0:T(Failure)");
}

namespace {

/// Records what a World tells its input observer of resumes, one line per call.
struct ResumeLog final : WorldInputObserver {
    std::vector<std::string> lines;
    void on_resume(const ResumeHandle& h, Status status, bool accepted) override {
        lines.push_back("slot " + std::to_string(h.agent.index) + " gen " + std::to_string(h.agent.generation) + " node " +
                        std::to_string(h.node) + " run " + std::to_string(h.run) + " " + to_string(status) +
                        (accepted ? " accepted" : " refused"));
    }
    void on_step(Duration) override {}
    void on_publish() override {}
    void on_step_end(const FrameMetrics&) override {}
    void on_spawn(AgentHandle, const Tree&, const SpawnOptions&) override {}
    void on_despawn(AgentHandle) override {}
    void on_abort(AgentHandle) override {}
    void on_tick_interval(AgentHandle, std::uint32_t) override {}
    void on_agent_budget(std::uint32_t) override {}
    void on_create_shared(SharedBlackboard&) override {}
};

/// Agent 0 runs Parallel(Move, Kick), whose Kick resumes a list of moves from inside its tick (its
/// own Move, passed by the walk already, and the moves of sleeping agents before and after it in slot
/// order); agents 1.. run the mover tree and sleep while they move. `batched` makes Kick resume
/// them with World::resume_all, otherwise with World::resume one by one.
struct KickerWorld {
    Registry registry;
    std::vector<ResumeHandle> moves;
    std::vector<test::TraceRecorder> traces;
    std::vector<ResumeHandle> to_kick;
    ResumeLog log;
    World world;
    std::size_t accepted = 0;

    KickerWorld(std::size_t count, bool batched) : moves(count), traces(count) {
        registry.add_latent_action("Move", [this](ActionContext& ctx, const ResumeHandle& move) { moves[ctx.agent().seed()] = move; });
        registry.add_action("Kick", [this, batched](ActionContext&) {
            if (batched) {
                accepted += world.resume_all(to_kick, Status::Success);
            } else {
                for (const ResumeHandle& h : to_kick) accepted += world.resume(h, Status::Success) ? 1 : 0;
            }
            to_kick.clear();
            return Status::Running;
        });
        const Tree kicker = TreeBuilder("kicker", registry).parallel(Policy::RequireAll, Policy::RequireOne).action("Move").action("Kick").back().end();
        const Tree mover = TreeBuilder("mover", registry).selector().action("Move").back().end();
        // The kicker in slot 2: movers before it (slots 0, 1) and after it.
        for (std::size_t i = 0; i < count; ++i)
            world.spawn(i == 2 ? kicker : mover, {.mode = Mode::Event, .seed = i, .listener = &traces[i]});
        world.set_input_observer(&log);
        world.step(50ms);  // every agent starts its first move
    }
};

}  // namespace

TEST_CASE("world: resume_all from inside a tick wakes, refuses and tells the input observer exactly as resume") {
    constexpr std::size_t kAgents = 6;
    KickerWorld one_by_one(kAgents, false);
    KickerWorld batched(kAgents, true);
    for (KickerWorld* w : {&one_by_one, &batched}) {
        // The kicker's own move (in its tick, after the walk passed it), sleeping movers before and after
        // it in slot order, one of them twice (refused the second time).
        w->to_kick = {w->moves[2], w->moves[4], w->moves[0], w->moves[4]};
        w->world.step(50ms);
        w->world.step(50ms);
        w->world.step(50ms);
    }
    CHECK(batched.accepted == 3);
    CHECK(one_by_one.accepted == 3);
    CHECK(batched.log.lines == one_by_one.log.lines);
    REQUIRE(batched.log.lines.size() == 4);
    CHECK(batched.log.lines[3] == "slot 4 gen 1 node 1 run 1 Success refused");
    for (std::size_t i = 0; i < kAgents; ++i) {
        CAPTURE(i);
        CHECK(batched.traces[i].lifecycle() == one_by_one.traces[i].lifecycle());
    }
    CHECK(batched.world.state_hash() == one_by_one.world.state_hash());
    // Mover 4 (after the kicker) was woken in the frame of the resume and ended its move in it; mover 0
    // (before it) ended it in the next frame; the root restarted them on the frame after that.
    CHECK(one_by_one.traces[4].tick(1) == "1:T(Success) 0:T(Success)");
    CHECK(one_by_one.traces[4].tick(2) == "0:I 1:I");
    CHECK(one_by_one.traces[0].tick(1).empty());
    CHECK(one_by_one.traces[0].tick(2) == "1:T(Success) 0:T(Success)");
}

TEST_CASE("world: resume_all of lists shorter and longer than its prefetch pipeline, with handles of no slot, as resume one by one") {
    // World::resume_all locates each handle's slot some handles ahead of its resume and fetches its
    // agent's block a few handles ahead: lists of every length around those distances, each with
    // handles whose index is no slot of the world (one just past the last slot, one far off, both
    // otherwise the copy of a live agent's move handle), a handle twice and a despawned agent's.
    constexpr std::size_t kAgents = 12;
    std::vector<std::size_t> lengths(21);
    for (std::size_t length = 0; length < lengths.size(); ++length) lengths[length] = length;
    for_each_mode_and_length(kAgents, lengths, [&](MoverWorld& one_by_one, MoverWorld& batched, std::size_t length) {
        const auto list_of = [&](MoverWorld& w) {
            std::vector<ResumeHandle> list;
            for (std::size_t k = 0; list.size() < length; ++k) {
                ResumeHandle h = w.moves[(k * 5) % kAgents];
                if (k % 7 == 3) h.agent.index = static_cast<std::uint32_t>(kAgents);       // past the last slot
                if (k % 7 == 5) h.agent.index = 1'000'000'000;                              // far off
                list.push_back(h);
            }
            return list;
        };
        for (MoverWorld* w : {&one_by_one, &batched}) CHECK(w->world.despawn(w->agents[5]));
        const std::size_t accepted = resume_both(one_by_one, list_of(one_by_one), batched, list_of(batched), Status::Success);
        step_and_compare(one_by_one, batched, 2);
        if (length == 20) CHECK(accepted == 9);  // agents 0, 3, 4, 6, 7, 8, 9, 10, 11 (not 5, despawned), once each
    });
}

TEST_CASE("world: resume_all of an agent with other work queued puts the resumed action in tree order") {
    // Parallel(Shout, Move): between ticks the agent's queue holds Shout's next update in front of the
    // end-of-frame marker, so the resumed Move (after Shout in tree order) goes behind it, not in front
    // of everything as for a sleeping agent (Runtime::place_in_order). The polling walker, which has no
    // queue, is the reference.
    std::vector<std::string> traces;
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(mode == Mode::Event ? "event" : "polling");
        Registry registry;
        ResumeHandle move;
        int shouts = 0;
        registry.add_latent_action("Move", [&move](ActionContext&, const ResumeHandle& h) { move = h; });
        registry.add_action("Shout", [&shouts](ActionContext&) {
            ++shouts;
            return Status::Running;
        });
        const Tree tree =
            TreeBuilder("both", registry).parallel(Policy::RequireAll, Policy::RequireOne).action("Shout").action("Move").back().end();
        World world;
        test::TraceRecorder trace;
        world.spawn(tree, {.mode = mode, .listener = &trace});
        world.step(50ms);
        world.step(50ms);
        const std::vector<ResumeHandle> list{move};
        CHECK(world.resume_all(list, Status::Failure) == 1);
        world.step(50ms);
        world.step(50ms);
        CHECK(shouts == 4);  // Shout was updated in the frame of Move's end too, before it (tree order)
        traces.push_back(trace.tick(2) + " | " + trace.tick(3));  // (the world's first frame is tick 0)
    }
    CHECK(traces[0] == traces[1]);
    CHECK(traces[0] == "1:U 2:T(Failure) 1:T(Aborted) 0:T(Failure) | 0:I 1:I 1:U 2:I");
}

TEST_CASE("world: resume_all of lists whose handles are all good, over several of the world's slot chunks, as resume one by one") {
    // The common case: every handle names a live agent's suspended move. 200 agents fill the world's
    // first three slot chunks (32, 64 and 128 slots), so that the lists' handles are located in each;
    // the order is unlike slot order. Some agents were woken by a write before the resumes (their
    // awake bit is set already). Lists of every length from 0 to 40, then all 200.
    constexpr std::size_t kAgents = 200;
    for_each_mode_and_length(kAgents, {0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 24, 33, 40, 200},
                             [&](MoverWorld& one_by_one, MoverWorld& batched, std::size_t length) {
        const auto list_of = [&](MoverWorld& w) {
            std::vector<ResumeHandle> list;
            for (std::size_t k = 0; k < length; ++k) list.push_back(w.moves[(k * 77 + 13) % kAgents]);  // 77 and 200 coprime: no repeats
            return list;
        };
        for (MoverWorld* w : {&one_by_one, &batched})
            for (std::size_t i = 0; i < kAgents; i += 9) w->world.agent(w->agents[i])->blackboard().set("alarm", false);  // no change: no wake
        for (MoverWorld* w : {&one_by_one, &batched})
            for (std::size_t i = 4; i < kAgents; i += 11) w->world.agent(w->agents[i])->blackboard().set("alarm", true);   // woken, to Shout
        const std::vector<ResumeHandle> second = list_of(batched);
        const std::size_t accepted = resume_both(one_by_one, list_of(one_by_one), batched, second, Status::Failure);
        CHECK(accepted == length);  // (the woken agents' moves are still suspended until their tick)
        step_and_compare(one_by_one, batched, 3);
        // The second resume of the same handles is refused (the moves ended).
        CHECK(batched.world.resume_all(second, Status::Failure) == 0);
    });
}

TEST_CASE("world: resume_all refuses a bad handle in the middle of a run of good ones, and resumes the rest, as resume one by one") {
    // Between good handles: a despawned agent's (stale), one whose slot was despawned and spawned again
    // (the old generation; the new agent's own move is in the list too and accepted), one with the next
    // generation of a live slot, one of another world's agent in the same slot (same index and
    // generation, another serial), one naming a node past the tree's last, one of an earlier run and
    // ones whose run id differs from the move's in its low 32 bits only, or above them only.
    constexpr std::size_t kAgents = 48;
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(mode == Mode::Event ? "event" : "polling");
        MoverWorld one_by_one(kAgents, mode);
        MoverWorld batched(kAgents, mode);
        MoverWorld other(kAgents, mode);
        const std::size_t nodes = one_by_one.world.agent(one_by_one.agents[0])->tree().size();
        std::vector<std::vector<ResumeHandle>> lists;
        for (MoverWorld* w : {&one_by_one, &batched}) {
            const ResumeHandle despawned = w->moves[7];
            const ResumeHandle replaced = w->moves[20];
            CHECK(w->world.despawn(w->agents[7]));
            CHECK(w->world.despawn(w->agents[20]));
            // The new agent takes the slot freed last (20), at its next generation; its first move starts
            // in its first tick.
            const AgentHandle again = w->world.spawn(w->tree, {.mode = mode, .seed = 20, .listener = &w->traces[20]});
            REQUIRE(again.index == replaced.agent.index);
            REQUIRE(again.generation == replaced.agent.generation + 1);
            w->world.step(50ms);
            REQUIRE(w->moves[20].agent == again);
            ResumeHandle next_generation = w->moves[30];
            ++next_generation.agent.generation;
            ResumeHandle foreign = other.moves[33];
            REQUIRE(foreign.agent == w->moves[33].agent);
            ResumeHandle past_last_node = w->moves[34];
            past_last_node.node = static_cast<NodeIndex>(nodes);
            ResumeHandle earlier_run = w->moves[35];
            --earlier_run.run;
            ResumeHandle low_bits = w->moves[36];
            low_bits.run ^= std::uint64_t{1} << 31;
            ResumeHandle high_bits = w->moves[37];
            high_bits.run |= std::uint64_t{1} << 32;
            ResumeHandle above_48_bits = w->moves[38];
            above_48_bits.run |= std::uint64_t{1} << 48;
            std::vector<ResumeHandle> list;
            const std::vector<ResumeHandle> bad{despawned,   replaced,  next_generation, foreign, past_last_node,
                                                earlier_run, low_bits, high_bits,       above_48_bits};
            const std::size_t before[] = {0, 1, 2, 3, 4, 5, 6, 8, 9};
            const std::size_t after[] = {47, 46, 45, 44, 43, 42, 41, 40, 10};
            for (std::size_t k = 0; k < bad.size(); ++k) {
                // Two good handles (agents far apart in slot order), then a bad one.
                list.push_back(w->moves[before[k]]);
                list.push_back(w->moves[after[k]]);
                list.push_back(bad[k]);
            }
            list.push_back(w->moves[20]);  // the new agent's move
            list.push_back(w->moves[11]);
            lists.push_back(list);
        }
        std::vector<bool> each;
        for (const ResumeHandle& h : lists[0]) each.push_back(one_by_one.world.resume(h, Status::Success));
        std::size_t accepted = 0;
        for (std::size_t k = 0; k < each.size(); ++k) {
            CAPTURE(k);
            CHECK(each[k] == (k % 3 != 2 || k >= 27));  // every third (the bad ones) refused; the good ones once each
            accepted += each[k] ? 1 : 0;
        }
        CHECK(accepted == 20);  // agents 0..6, 8, 9, 10, 40..47, and the new 20 and 11
        CHECK(batched.world.resume_all(lists[1], Status::Success) == accepted);
        step_and_compare(one_by_one, batched, 3);
    }
}
