// World::resume_all: a batch of resumes (a game system finishing a frame's moves) behaves exactly as
// the same resumes made one by one with World::resume: the same handles accepted, the same traces,
// the same world afterwards.
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
        registry.add_latent_action("Move", [this](ActionContext& ctx, const ResumeHandle& move) { moves[ctx.agent().seed()] = move; });
        registry.add_action("Shout", [](ActionContext&) { return Status::Running; });
        tree = TreeBuilder("mover", registry)
                   .key<bool>("alarm")
                   .active_selector()
                       .sequence()
                           .check("alarm")
                           .action("Shout")
                       .back()
                       .action("Move")
                   .back()
                   .end();
        for (std::size_t i = 0; i < count; ++i)
            agents.push_back(world.spawn(tree, {.mode = mode, .seed = i, .listener = &traces[i]}));
        world.step(50ms);  // every agent starts its first move
    }
};

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

        for (int frame = 0; frame < 3; ++frame) {
            one_by_one.world.step(50ms);
            batched.world.step(50ms);
        }
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            CHECK(batched.traces[i].lifecycle() == one_by_one.traces[i].lifecycle());
        }
        CHECK(batched.world.state_hash() == one_by_one.world.state_hash());
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
