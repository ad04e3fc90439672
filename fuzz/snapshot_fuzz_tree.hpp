// The tree the snapshot fuzzer restores its inputs into (fuzz/snapshot_fuzzer.cpp), and a run of it
// that the seed corpus (fuzz/corpus_snapshot/) was saved from: one place, so that seeds and fuzzer
// agree on the structural hash. Nearly every kind of node state: cursors, counters, a random
// selector's drawn order, deadlines, a suspended action, action memory, int, bool and string keys.
#pragma once

#include <ebt/ebt.hpp>

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

}  // namespace ebt::fuzz
