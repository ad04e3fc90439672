// The random worlds of the World tests (parallel stepping, world snapshots): NPCs whose actions
// decide from a seed what they write, whether they succeed, fail or keep running, and which park
// their suspended runs with the game; random trees of guards, waits, timeouts and latent actions
// over three private keys and a team's shared keys; and the game's inputs between frames. Each test
// file builds its own worlds from these; the shapes differ per file so that their trees do too.
// Test code only.
#pragma once

#include "support/trace_recorder.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ebt::test {

/// A fixed 64-bit mix of three numbers: every random choice of the random worlds is one of these.
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    std::uint64_t z = a * 0x9E3779B97F4A7C15ull + b * 0xBF58476D1CE4E5B9ull + c * 0x94D049BB133111EBull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// One NPC of a random world, the game's (not the world's): what its actions decide from, its
/// suspended runs (the game resumes them between frames) and its trace (the agent's own listener).
/// Only its own agent's actions touch it, as the threading rule asks (docs/world.md, "Threads").
struct RandomNpc {
    std::uint64_t seed = 0;
    std::vector<ResumeHandle> suspended;
    TraceRecorder trace;
};

/// The random worlds' actions: "Work" (decides from the NPC's seed, the tick and the node: writes
/// one of its keys k0-k2, the team's flag and count through its ports, and returns any status) and
/// "Latent" (suspends, handing its resume handle to the NPC). Each agent's user pointer is its
/// RandomNpc.
inline const Registry& random_world_registry() {
    static const Registry registry = [] {
        Registry r;
        ActionSpec work;
        work.ports = {port<bool>("team.flag"), port<int>("team.count")};
        work.update = [](ActionContext& ctx) {
            RandomNpc& npc = ctx.user<RandomNpc>();
            const std::uint64_t x = mix(npc.seed, ctx.tick(), ctx.node());
            if (x % 5 == 0) ctx.blackboard().set(std::string("k") + std::to_string((x >> 8) % 3), ((x >> 12) & 1) != 0);
            if (x % 7 == 0) ctx.out("team.flag", ((x >> 16) & 1) != 0);
            if (x % 3 == 0) ctx.out("team.count", static_cast<int>((x >> 20) % 50) + ctx.in<int>("team.count") % 7);
            switch ((x >> 24) % 4) {
            case 0: return Status::Success;
            case 1: return Status::Failure;
            default: return Status::Running;
            }
        };
        r.add_action("Work", work);
        r.add_latent_action("Latent", [](ActionContext& ctx, const ResumeHandle& handle) { ctx.user<RandomNpc>().suspended.push_back(handle); });
        return r;
    }();
    return registry;
}

/// What differs between the random trees of two test files: the tree names, the salt of the draws,
/// the lengths of waits and timeouts, and whether inverters are drawn.
struct RandomTreeShape {
    const char* name = "random-";
    std::uint64_t salt = 17;
    int wait_ms = 50, wait_steps = 4;         // a Wait lasts wait_ms * (1 + draw % wait_steps)
    int timeout_ms = 100, timeout_steps = 5;  // a Timeout likewise
    bool inverters = true;
};

namespace detail_random_world {
inline void node(TreeBuilder& b, const RandomTreeShape& shape, std::uint64_t seed, std::uint64_t& draw, int depth) {
    const std::uint64_t x = mix(seed, ++draw, shape.salt);
    const char* keys[] = {"k0", "k1", "k2", "team.flag"};
    if (depth >= 3 || x % 3 == 0) {
        switch ((x >> 4) % 5) {
        case 0: b.action("Latent"); break;
        case 1: b.check(keys[(x >> 8) % 4], ((x >> 10) & 1) != 0); break;
        case 2: b.wait(std::chrono::milliseconds(shape.wait_ms * (1 + static_cast<int>((x >> 12) % static_cast<std::uint64_t>(shape.wait_steps))))); break;
        default: b.action("Work"); break;
        }
        return;
    }
    const int children = 1 + static_cast<int>((x >> 16) % 3);
    const std::uint64_t kind = (x >> 4) % (shape.inverters ? 7 : 6);
    const auto timeout = [&] {
        return std::chrono::milliseconds(shape.timeout_ms * (1 + static_cast<int>((x >> 20) % static_cast<std::uint64_t>(shape.timeout_steps))));
    };
    switch (kind) {
    case 0: b.sequence(); break;
    case 1: b.selector(); break;
    case 2: b.reactive_sequence(); break;
    case 3: b.parallel(Policy::RequireOne, Policy::RequireAll); break;
    case 4:
        if (shape.inverters) {
            b.inverter();
        } else {
            b.timeout(timeout());
        }
        node(b, shape, seed, draw, depth + 1);
        b.back();
        return;
    case 5:
        if (shape.inverters) {
            b.timeout(timeout());
            node(b, shape, seed, draw, depth + 1);
            b.back();
            return;
        }
        [[fallthrough]];
    default:
        // A guarded branch before a fallback: the guard reads a key written by the game or an action.
        b.active_selector().sequence().check(keys[(x >> 8) % 4], true);
        node(b, shape, seed, draw, depth + 1);
        b.back();
        node(b, shape, seed, draw, depth + 1);
        b.back();
        return;
    }
    for (int c = 0; c < children; ++c) node(b, shape, seed, draw, depth + 1);
    b.back();
}
}  // namespace detail_random_world

/// A random tree of `shape` drawn from `seed`: a Selector over a random subtree (depth up to 3) and
/// a fallback Work. Keys k0-k2 (bool) and the scope "team" (flag: bool, count: int), which every
/// agent must be given with `.shared = {{"team", ...}}`.
inline Tree random_world_tree(std::uint64_t seed, const RandomTreeShape& shape = {}) {
    TreeBuilder b(shape.name + std::to_string(seed), random_world_registry());
    b.key<bool>("k0").key<bool>("k1").key<bool>("k2").shared_key<bool>("team", "flag").shared_key<int>("team", "count");
    std::uint64_t draw = 0;
    b.selector();
    detail_random_world::node(b, shape, seed, draw, 1);
    b.action("Work");
    b.back();
    return b.end();
}

/// The game's inputs to one NPC before a frame, from the draw `x`: a write of one of its keys (one
/// draw in three), and a resume of its oldest suspended run (one in four of those that have one).
inline void poke_random_npc(World& world, AgentHandle handle, RandomNpc& npc, std::uint64_t x) {
    if (x % 3 == 0) world.at(handle).blackboard().set(std::string("k") + std::to_string((x >> 4) % 3), ((x >> 8) & 1) != 0);
    if (!npc.suspended.empty() && (x >> 12) % 4 == 0) {
        world.resume(npc.suspended.front(), ((x >> 16) & 1) ? Status::Success : Status::Failure);
        npc.suspended.erase(npc.suspended.begin());
    }
}

}  // namespace ebt::test
