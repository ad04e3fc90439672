// What a std::string blackboard key costs next to an int key (docs/architecture.md, "Blackboard
// values"). Run it on a quiet machine and read the times as ratios within one run.
//
//   BM_WriteGuarded/int            a changing write of an int key that a live guard compares (== 7),
//                                  then the tick that re-evaluates it
//   BM_WriteGuarded/short_string   the same with a std::string key and short values (<= 15
//                                  characters: in the string itself, no allocation)
//   BM_WriteGuarded/long_string    the same with values of 40 characters (heap buffer; after the
//                                  first write the stored string reuses its buffer)
//   BM_CreateAgent/{int,string}    creating and destroying an agent of the tree with that key
//                                  (the string is constructed in the agent's block and destroyed
//                                  with it)
#include <ebt/ebt.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace ebt;
using namespace std::chrono_literals;

enum Kind { kInt, kShort, kLong };

Registry& registry() {
    static Registry reg = [] {
        Registry r;
        r.add_action("Patrol", [](ActionContext&) { return Status::Running; });
        r.add_action("Respond", [](ActionContext&) { return Status::Running; });
        return r;
    }();
    return reg;
}

/// Patrol, preempted by Respond while the key equals the alarm value (which no write stores, so that
/// every write wakes the guard and none switches branches).
Tree tree_of(bool string_key) {
    TreeBuilder b(string_key ? "string_guard" : "int_guard", registry());
    if (string_key) b.key<std::string>("k");
    else b.key<int>("k");
    return b.active_selector()
        .sequence().condition(string_key ? eq("k", "alarm") : eq("k", 7)).action("Respond").back()
        .action("Patrol")
        .back()
        .end();
}

void BM_WriteGuarded(benchmark::State& state) {
    const auto kind = static_cast<Kind>(state.range(0));
    const Tree tree = tree_of(kind != kInt);
    Agent agent(tree);
    agent.tick(16ms);
    Blackboard& bb = agent.blackboard();
    const std::string a = kind == kLong ? std::string(40, 'a') : "quiet";
    const std::string b = kind == kLong ? std::string(40, 'b') : "hush";
    int i = 0;
    for (auto _ : state) {
        if (kind == kInt) bb.set(bb.key<int>("k"), i % 2);
        else bb.set(bb.key<std::string>("k"), i % 2 ? a : b);
        agent.tick(16ms);
        ++i;
    }
    state.SetLabel(kind == kInt ? "int" : kind == kShort ? "short_string" : "long_string");
}
BENCHMARK(BM_WriteGuarded)->Arg(kInt)->Arg(kShort)->Arg(kLong);

void BM_CreateAgent(benchmark::State& state) {
    const Tree tree = tree_of(state.range(0) != 0);
    for (auto _ : state) {
        Agent agent(tree);
        benchmark::DoNotOptimize(&agent);
    }
    state.SetLabel(state.range(0) ? "string" : "int");
}
BENCHMARK(BM_CreateAgent)->Arg(0)->Arg(1);

}  // namespace
