#include "guard_scenario.hpp"

namespace ebt::scenarios {

void register_guard_actions(Registry& registry) {
    registry.add_action("Patrol", [](ActionContext&) { return Status::Running; });
    register_fight_actions(registry);
}

void register_fight_actions(Registry& registry) {
    registry.add_action("Attack", [](ActionContext&) { return Status::Running; });
    registry.add_action(
        "Runaway", [](ActionContext& ctx) { return ctx.in<bool>(0) ? Status::Running : Status::Success; },
        {port<bool>("health_low")});
}

TreeBuilder& add_fight_branch(TreeBuilder& builder) {
    return builder
        .sequence()
            .check(kEnemySeen)
            .active_selector()
                .sequence()
                    .check(kHealthLow)
                    .action("Runaway")
                .back()
                .monitor(Policy::RequireAll, Policy::RequireOne)
                    .check(kEnemyDead, false)
                    .action("Attack")
                .back()
            .back()
        .back();
}

Tree guard_tree(const Registry& registry) {
    TreeBuilder builder("guard", registry);
    builder.key<bool>(kEnemySeen).key<bool>(kHealthLow).key<bool>(kEnemyDead).active_selector();
    return add_fight_branch(builder).action("Patrol").back().end();
}

}  // namespace ebt::scenarios
