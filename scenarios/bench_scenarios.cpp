#include "bench_scenarios.hpp"

#include <string>

namespace ebt::scenarios {

namespace {
std::uint64_t mix(std::uint64_t x) {
    x = (x ^ (x >> 33)) * 0xFF51AFD7ED558CCDull;
    x = (x ^ (x >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
}

// The guard tree's keys, mapped to the same names in the outer tree.
std::vector<std::pair<std::string, std::string>> guard_keys() {
    return {{kEnemySeen, kEnemySeen}, {kHealthLow, kHealthLow}, {kEnemyDead, kEnemyDead}};
}

TreeBuilder& declare_guard_keys(TreeBuilder& b) {
    return b.key<bool>(kEnemySeen).key<bool>(kHealthLow).key<bool>(kEnemyDead);
}
}  // namespace

// ---- MovementSystem ------------------------------------------------------------------------------

void MovementSystem::request(const ResumeHandle& handle, std::uint64_t seed) {
    const std::uint64_t spread = kLongestMove - kShortestMove + 1;
    const std::uint64_t length = kShortestMove + mix(seed * 1'000'003u + requests_++) % spread;
    due_[(frame_ + length) % kBuckets].push_back(handle);
    ++pending_;
}

std::size_t MovementSystem::step(World& world) {
    ++frame_;
    std::vector<ResumeHandle>& due = due_[frame_ % kBuckets];
    // Resuming does not run the action (it ends when its agent next ticks), so no request can land
    // in this bucket while it is being emptied.
    const std::size_t resumed = world.resume_all(due, Status::Success);
    pending_ -= due.size();
    due.clear();
    return resumed;
}

void register_latent_guard_actions(Registry& registry, MovementSystem& movement) {
    register_fight_actions(registry);
    registry.add_latent_action("Patrol", [&movement](ActionContext& ctx, const ResumeHandle& move) {
        movement.request(move, ctx.agent().seed());
    });
}

// ---- trees -----------------------------------------------------------------------------------------

Tree wide_guard_tree(const Registry& registry, int k) {
    const Tree guard = guard_tree(registry);
    TreeBuilder b("wide_" + std::to_string(k), registry);
    declare_guard_keys(b);
    for (int i = 0; i < k; ++i) b.key<bool>("threat_" + std::to_string(i));
    b.active_selector();
    for (int i = 0; i < k; ++i) b.sequence().check("threat_" + std::to_string(i)).action("Attack").back();
    b.subtree(guard, guard_keys());
    b.back();
    return b.end();
}

Tree deep_guard_tree(const Registry& registry, int d) {
    const Tree guard = guard_tree(registry);
    TreeBuilder b("deep_" + std::to_string(d), registry);
    declare_guard_keys(b);
    for (int i = 0; i < d; ++i) b.key<bool>("ok_" + std::to_string(i), true);
    for (int i = 0; i < d; ++i) b.sequence().precondition(Predicate::is("ok_" + std::to_string(i))).abort(AbortMode::Self);
    b.subtree(guard, guard_keys());
    for (int i = 0; i < d; ++i) b.back();
    return b.end();
}

void register_waiting_actions(Registry& registry) {
    registry.add_latent_action("Nap", [](ActionContext&, const ResumeHandle&) {});  // nobody resumes it
}

Tree waiting_tree(const Registry& registry) {
    return TreeBuilder("waiting", registry)
        .key<bool>(kIsSleeper)
        .selector()
            .sequence()
                .check(kIsSleeper)
                .wait(kLongWait)
            .back()
            .action("Nap")
        .back()
        .end();
}

// ---- ChurnWriter ------------------------------------------------------------------------------------

ChurnWriter::ChurnWriter(const Tree& tree, std::size_t agents, double share)
    : enemy_seen_(tree.key<bool>(kEnemySeen)),
      enemy_dead_(tree.key<bool>(kEnemyDead)),
      agents_(agents),
      share_(share) {
    if (!(share >= 0 && share <= 1)) throw UsageError("ChurnWriter: the share of agents must be in [0, 1]");
}

void ChurnWriter::toggle(Blackboard& bb) const {
    if (bb.get(enemy_seen_)) {  // attacking: the enemy is killed
        bb.set(enemy_seen_, false);
        bb.set(enemy_dead_, true);
    } else {  // patrolling: an enemy appears
        bb.set(enemy_dead_, false);
        bb.set(enemy_seen_, true);
    }
}

}  // namespace ebt::scenarios
