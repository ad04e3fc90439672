// The tree the snapshot fuzzer restores its inputs into (fuzz/snapshot_fuzzer.cpp), and a run of it
// that the seed corpus (fuzz/corpus_snapshot/) was saved from: one place, so that seeds and fuzzer
// agree on the structural hash. Nearly every kind of node state: cursors, counters, a random
// selector's drawn order, deadlines, a suspended action, action memory, int, bool and string keys.
#pragma once

#include <ebt/ebt.hpp>
#include <ebt/world.hpp>

#include <chrono>
#include <string>

namespace ebt::fuzz {

inline const Registry& snapshot_registry() {
    static const Registry registry = [] {
        Registry r;
        ActionSpec count;
        count.memory_bytes = sizeof(int);
        count.update = [](ActionContext& ctx) {
            int& n = ctx.memory<int>();
            ctx.blackboard().set("hits", ++n);
            ctx.blackboard().set("bark", std::string(static_cast<std::size_t>(n % 20), 'x'));
            return n % 3 == 0 ? Status::Success : Status::Running;
        };
        r.add_action("Count", count);
        r.add_latent_action("Move", [](ActionContext&, const ResumeHandle&) {});
        return r;
    }();
    return registry;
}

inline Tree snapshot_tree() {
    using namespace std::chrono_literals;
    return TreeBuilder("fuzzed", snapshot_registry())
        .key<bool>("alert")
        .key<int>("hits")
        .key<std::string>("bark")
        .active_selector()
            .sequence(NodeOptions{.precondition = Predicate::is("alert")}).action("Count").wait(150ms).back()
            .parallel(Policy::RequireAll, Policy::RequireOne)
                .action("Move")
                .repeat(3).random_selector().action("Count").timeout(200ms).action("Count").back().back().back()
                .cooldown(100ms).wait(50ms).back()
            .back()
        .back()
        .end();
}

/// The run of a World that fuzz/corpus_snapshot/world_frame6.ebtsnap was saved from (after it): three
/// agents of snapshot_tree() in both modes and at two LOD intervals, one despawned at frame 3 (a free
/// slot), an agent budget of 2, an alert raised at frame 2.
inline void snapshot_world_run(World& world) {
    using namespace std::chrono_literals;
    const Tree tree = snapshot_tree();
    world.set_agent_budget(2);
    const AgentHandle a = world.spawn(tree, {.mode = Mode::Event, .seed = 1});
    const AgentHandle b = world.spawn(tree, {.mode = Mode::Polling, .seed = 2, .tick_interval = 2});
    world.spawn(tree, {.mode = Mode::Event, .seed = 3});
    for (int frame = 0; frame < 6; ++frame) {
        if (frame == 2) world.at(a).blackboard().set("alert", true);
        if (frame == 3) world.despawn(b);
        world.step(40ms);
    }
}

}  // namespace ebt::fuzz
