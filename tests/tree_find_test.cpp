// Tree::find: looking nodes up by label, action/condition name, subtree name or path, the errors for
// a path that matches nothing or more than one node, and Agent::status(NodeRef).
#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

Status keep_running(ActionContext&) { return Status::Running; }

Registry make_registry() {
    Registry reg;
    reg.add_action("Patrol", keep_running);
    reg.add_action("Attack", keep_running);
    reg.add_action("Flee", keep_running);
    reg.add_condition("CanSee", [](const ConditionContext&) { return true; });
    return reg;
}

// 0 ActiveSelector
// 1   Sequence engage          [enemy_seen]
// 2     Condition enemy_seen
// 3     ActiveSelector
// 4       Sequence flee        [health_low]
// 5         Condition health_low
// 6         Action Flee
// 7       Action Attack
// 8   Sequence
// 9     Condition CanSee
// 10    Action Attack
// 11  Action Patrol
Tree guard_tree(const Registry& reg) {
    return TreeBuilder("guard", reg)
        .key<bool>("enemy_seen").key<bool>("health_low")
        .active_selector()
            .sequence().label("engage")
                .check("enemy_seen")
                .active_selector()
                    .sequence().label("flee").check("health_low").action("Flee").back()
                    .action("Attack")
                .back()
            .back()
            .sequence().condition("CanSee").action("Attack").back()
            .action("Patrol")
        .back()
        .end();
}

std::string find_error(const Tree& tree, std::string_view path) {
    try {
        tree.find(path);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("find: a node by its label, action or condition name, or checked key") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(tree.find("engage").index() == 1);
    CHECK(tree.find("flee").index() == 4);
    CHECK(tree.find("Flee").index() == 6);  // names are case-sensitive: the action, not the sequence
    CHECK(tree.find("Patrol").index() == 11);
    CHECK(tree.find("CanSee").index() == 9);
    CHECK(tree.find("enemy_seen").index() == 2);
    CHECK(tree.find("health_low").index() == 5);
    // An unlabeled node is named by its kind.
    CHECK(tree.find("engage/ActiveSelector").index() == 3);
}

TEST_CASE("find: names separated by '/' look below the node matched before, at any depth") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(tree.find("engage/Attack").index() == 7);
    CHECK(tree.find("engage/flee").index() == 4);
    CHECK(tree.find("engage/flee/Flee").index() == 6);
    CHECK(tree.find("engage/Flee").index() == 6);
    CHECK(tree.find("CanSee") == tree.node(9));
    // A position picks one of several children of the same name.
    CHECK(tree.find("Sequence[1]/Attack").index() == 10);
    CHECK(tree.find("ActiveSelector[1]/Attack").index() == 7);
    CHECK(tree.find("engage/Attack[1]").index() == 7);
}

TEST_CASE("find: a path from the root goes one level per name; every Tree::path finds its node") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(tree.find("/ActiveSelector/engage/ActiveSelector/Attack").index() == 7);
    CHECK(tree.find("/ActiveSelector/Sequence/Attack").index() == 10);
    CHECK(tree.find("/ActiveSelector").index() == 0);
    for (NodeIndex i = 0; i < tree.size(); ++i) {
        CAPTURE(tree.path(i));
        CHECK(tree.find(tree.path(i)).index() == i);
    }
}

TEST_CASE("find: an inlined subtree is named by its tree's name") {
    const Registry reg = make_registry();
    const Tree flee = TreeBuilder("run_away", reg).sequence().action("Flee").action("Patrol").back().end();
    const Tree tree = TreeBuilder("outer", reg).selector().subtree(flee).action("Attack").back().end();
    CHECK(tree.find("run_away").index() == 1);
    CHECK(tree.find("run_away/Patrol").index() == 3);
    CHECK(tree.find("/Selector/run_away/Flee").index() == 2);
}

TEST_CASE("find: a path matching no node names the closest names or what is there instead") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(find_error(tree, "engag/flee") ==
          "tree 'guard': no node matches \"engag/flee\": no node is named 'engag'; the closest: 'engage' "
          "(/ActiveSelector/Sequence 'engage'[0]), 'flee' (/ActiveSelector/Sequence 'engage'[0]/ActiveSelector[1]/Sequence "
          "'flee'[0]), 'Flee' (/ActiveSelector/Sequence 'engage'[0]/ActiveSelector[1]/Sequence 'flee'[0]/Action 'Flee'[1])");
    CHECK(find_error(tree, "flee/Attack") ==
          "tree 'guard': no node matches \"flee/Attack\": nothing under /ActiveSelector/Sequence 'engage'[0]/ActiveSelector[1]/"
          "Sequence 'flee'[0] is named 'Attack', its children are 'health_low', 'Flee'");
    CHECK(find_error(tree, "Attack/Patrol") ==
          "tree 'guard': no node matches \"Attack/Patrol\": nothing under /ActiveSelector/Sequence 'engage'[0]/"
          "ActiveSelector[1]/Action 'Attack'[1] is named 'Patrol', it has no children; nothing under "
          "/ActiveSelector/Sequence[1]/Action 'Attack'[1] is named 'Patrol', it has no children");
    CHECK(find_error(tree, "/ActiveSelector/flee") ==
          "tree 'guard': no node matches \"/ActiveSelector/flee\": no child of /ActiveSelector is named 'flee', its children "
          "are 'engage', 'Sequence', 'Patrol'");
    CHECK(find_error(tree, "/Selector") == "tree 'guard': no node matches \"/Selector\": the root is /ActiveSelector");
    CHECK(find_error(tree, "engage/Attack[0]") ==
          "tree 'guard': no node matches \"engage/Attack[0]\": nothing under /ActiveSelector/Sequence 'engage'[0] is named "
          "'Attack' at position 0, its children are 'enemy_seen', 'ActiveSelector'");
    CHECK(find_error(tree, "") == "tree 'guard': no node matches \"\": an empty path names no node");
    CHECK(find_error(tree, "engage//Attack") ==
          "tree 'guard': no node matches \"engage//Attack\": the path has an empty name (names are separated by single '/')");
    CHECK(find_error(tree, "engage/") ==
          "tree 'guard': no node matches \"engage/\": the path has an empty name (names are separated by single '/')");
}

TEST_CASE("find: a path matching two nodes is refused with both paths") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(find_error(tree, "Attack") ==
          "tree 'guard': \"Attack\" is ambiguous, it matches 2 nodes: /ActiveSelector/Sequence 'engage'[0]/ActiveSelector[1]/"
          "Action 'Attack'[1], /ActiveSelector/Sequence[1]/Action 'Attack'[1] (name a node above it, as in \"parent/name\", or "
          "its position, as in \"name[1]\")");
    CHECK(find_error(tree, "ActiveSelector") ==
          "tree 'guard': \"ActiveSelector\" is ambiguous, it matches 2 nodes: /ActiveSelector, /ActiveSelector/Sequence "
          "'engage'[0]/ActiveSelector[1] (name a node above it, as in \"parent/name\", or its position, as in \"name[1]\")");
    // Below both, one node is named Sequence (the others have labels): no ambiguity.
    CHECK(tree.find("ActiveSelector/Sequence").index() == 8);
}

TEST_CASE("find: Agent::status takes the node found, and refuses a node of another tree") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    const NodeRef flee = tree.find("engage/flee/Flee");
    const NodeRef attack = tree.find("Sequence/Attack");
    const NodeRef patrol = tree.find("Patrol");
    Agent agent(tree);
    agent.tick(50ms);
    CHECK(agent.status(attack) == Status::Running);
    CHECK(agent.status(flee) == Status::Invalid);
    CHECK(agent.status(patrol) == Status::Invalid);
    agent.blackboard().set("enemy_seen", true);
    agent.blackboard().set("health_low", true);
    agent.tick(50ms);
    CHECK(agent.status(attack) == Status::Aborted);
    CHECK(agent.status(flee) == Status::Running);
    CHECK(agent.status(tree.find("engage")) == Status::Running);

    const Tree other = guard_tree(reg);  // built again: another tree
    Agent stranger(other);
    CHECK_THROWS_WITH_AS(stranger.status(flee), "Agent::status(): node 6 was found in another tree than 'guard'", UsageError);
    CHECK_THROWS_WITH_AS(agent.status(NodeRef{}), "Agent::status(): the NodeRef refers to no node", UsageError);
    // A copy of the tree is the same tree.
    const Tree copy = tree;
    Agent twin(copy);
    twin.tick(50ms);
    CHECK(twin.status(attack) == Status::Running);
    CHECK(twin.status(patrol) == Status::Invalid);
    CHECK_THROWS_WITH_AS(tree.node(12), "tree 'guard' has no node 12 (it has 12)", UsageError);
}
