// The program shown on the README's first screen (kept here so that it always builds and runs).
#include <ebt/ebt.hpp>

#include <cstdio>

using namespace std::chrono_literals;

int main() {
    ebt::Registry actions;
    actions.add_action("Patrol", [](ebt::ActionContext&) { return ebt::Status::Running; });
    actions.add_action("Attack", [](ebt::ActionContext&) { return ebt::Status::Running; });

    ebt::Tree tree = ebt::TreeBuilder("guard", actions)
        .key<bool>("enemy_seen")
        .active_selector()
            .sequence().label("engage").check("enemy_seen").action("Attack").back()  // preempts Patrol
            .action("Patrol")
        .back()
        .end();
    const ebt::NodeRef attack = tree.find("engage/Attack");

    ebt::Agent guard(tree);  // event-driven: a quiet frame costs Patrol's update, nothing else
    for (int frame = 0; frame < 4; ++frame) {
        if (frame == 2) guard.blackboard().set("enemy_seen", true);   // wakes the guard of "engage"
        guard.tick(50ms);
        std::printf("frame %d: %s\n", frame, guard.status(attack) == ebt::Status::Running ? "attacking" : "patrolling");
    }
}
