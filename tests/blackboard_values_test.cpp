// Blackboard values beyond trivially copyable: std::string keys (in the agent's block, in initial
// values, in comparisons, on shared blackboards, in the World's state hash), enums named with
// Registry::add_enum, and a user type with the BlackboardValue<T> opt-in.
#include "support/both_modes.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/ebt.hpp>
#include <ebt/detail/engine_access.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace game {
enum class Stance : std::uint8_t { Idle, Alert, Combat };

/// A user type that is not trivially copyable: an inventory list, opted in with BlackboardValue.
struct Loadout {
    std::vector<int> items;
    friend bool operator==(const Loadout&, const Loadout&) = default;
};
}  // namespace game

template <> struct ebt::BlackboardValue<game::Loadout> {
    static std::uint64_t hash(const game::Loadout& v) {
        std::uint64_t h = 7;
        for (const int i : v.items) h = h * 31 + static_cast<std::uint64_t>(i);
        return h;
    }
};

namespace {

const std::string kLong = "a bark far too long to fit in the short string buffer";

Registry barks() {
    Registry reg;
    reg.add_action("Shout", test::running_action());
    reg.add_action("Idle", test::running_action());
    return reg;
}

/// Idle until bark == "alarm" (the active selector's guard on "shout" preempts Idle), then Shout.
Tree shouter(const Registry& reg) {
    return TreeBuilder("shouter", reg)
        .key<std::string>("bark", std::string("quiet"))
        .active_selector()
            .sequence().label("shout").condition(eq("bark", "alarm")).action("Shout").back()
            .action("Idle")
        .back()
        .end();
}

}  // namespace

TEST_CASE("blackboard values: a std::string key lives in the agent, is read and written by key and by name") {
    const Registry reg = barks();
    const Tree tree = shouter(reg);
    Agent agent(tree);
    Blackboard& bb = agent.blackboard();
    CHECK(bb.get<std::string>("bark") == "quiet");
    const Key<std::string> bark = bb.key<std::string>("bark");
    CHECK(bb.set(bark, "alarm"));                  // a string literal on a Key<std::string>
    CHECK(bb.get(bark) == "alarm");
    CHECK_FALSE(bb.set("bark", "alarm"));          // equal: not a change
    CHECK(bb.set("bark", std::string_view("hush")));
    CHECK(bb.get<std::string>("bark") == "hush");
    CHECK(bb.set("bark", kLong));                  // a long string (heap buffer)
    CHECK(bb.get<std::string>("bark") == kLong);
    const char* pointer = "ptr";
    CHECK(bb.set("bark", pointer));                // a char pointer is stored as the string it points to
    CHECK(bb.get<std::string>("bark") == "ptr");
    CHECK_THROWS_WITH_AS(bb.set("bark", 3), "blackboard key 'bark' is declared as std::string, not int", UsageError);
    CHECK(bb.get<std::string>("bark") == "ptr");  // unchanged
}

TEST_CASE("blackboard values: string literals declare std::string keys and set std::string ports") {
    Registry reg = barks();
    ActionSpec say;
    say.ports = {input_port<std::string>("text")};
    std::string said;
    say.update = [&said](ActionContext& ctx) {
        said = ctx.in<std::string>("text");
        return Status::Running;
    };
    reg.add_action("Say", say);
    const Tree tree = TreeBuilder("sayer", reg)
                          .key("bark", "quiet")  // a std::string key
                          .shared_key("squad", "order", "hold")
                          .sequence().action("Say").port_value("text", "halt!").back()
                          .end();
    CHECK(tree.schema().info(tree.schema().find("bark")).type == type_of<std::string>());
    CHECK(tree.schema().info(tree.schema().find("squad.order")).type == type_of<std::string>());
    Agent agent(tree);
    CHECK(agent.blackboard().get<std::string>("bark") == "quiet");
    agent.tick(50ms);
    CHECK(said == "halt!");
}

TEST_CASE("blackboard values: a guard on a string key switches branches identically in both modes") {
    const Registry reg = barks();
    const Tree tree = shouter(reg);
    const NodeRef shout = tree.find("shout/Shout");
    const NodeRef idle = tree.find("Idle");
    std::vector<std::string> traces[2];
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        test::Run run(tree, mode);
        std::vector<std::string>& out = traces[mode == Mode::Event];
        for (int frame = 0; frame < 6; ++frame) {
            if (frame == 2) run.agent.blackboard().set("bark", "alarm");
            if (frame == 4) run.agent.blackboard().set("bark", kLong);
            const std::uint64_t n = run.agent.ticks();
            run.tick();
            out.push_back(run.rec.tick(n));
            const bool shouting = frame >= 2;  // no Self abort: the running branch keeps running when the bark changes
            CHECK(run.agent.status(shout) == (shouting ? Status::Running : Status::Invalid));
            CHECK(run.agent.status(idle) == (shouting ? Status::Aborted : Status::Running));
        }
    }
    CHECK(traces[0] == traces[1]);
    CHECK(traces[1][2] == "4:T(Aborted) 1:I 3:I 3:U");
    CHECK(traces[1][0] == "0:I 4:I 4:U");
    CHECK(traces[1][4] == "3:U");
}

TEST_CASE("blackboard values: initial string values at creation; agents moved, destroyed and despawned") {
    const Registry reg = barks();
    const Tree tree = shouter(reg);
    Agent a(tree, {.blackboard = {{"bark", "alarm"}}});
    CHECK(a.blackboard().get<std::string>("bark") == "alarm");
    Agent b(tree, {.blackboard = {{"bark", kLong}}});
    Agent moved(std::move(b));
    CHECK(moved.blackboard().get<std::string>("bark") == kLong);
    CHECK_THROWS_WITH_AS(b.blackboard().get<std::string>("bark"), "blackboard of a moved-from agent", UsageError);
    a = std::move(moved);  // destroys a's values, takes moved's block (ASan: no leak, no double destroy)
    CHECK(a.blackboard().get<std::string>("bark") == kLong);
    CHECK_THROWS_WITH_AS(Agent(tree, {.blackboard = {{"bark", 5}}}),
                         "Agent: key 'bark' of tree 'shouter' is std::string, but its initial value is int", UsageError);

    World world;
    const AgentHandle h = world.spawn(tree, {.blackboard = {{"bark", kLong + "!"}}});
    world.spawn(tree);
    world.step(50ms);
    CHECK(world.at(h).blackboard().get<std::string>("bark") == kLong + "!");
    CHECK(world.despawn(h));
    world.step(50ms);
}  // the World is destroyed with a live agent holding a string

TEST_CASE("blackboard values: the World's state hash hashes string contents, not their addresses") {
    const Registry reg = barks();
    const Tree tree = shouter(reg);
    auto hash_with = [&](const std::string& value, bool write_twice) {
        World world;
        const AgentHandle h = world.spawn(tree);
        if (write_twice) world.at(h).blackboard().set("bark", value + value);  // another heap buffer first
        world.at(h).blackboard().set("bark", value);
        world.step(50ms);
        return world.state_hash();
    };
    CHECK(hash_with(kLong, false) == hash_with(kLong, true));
    CHECK(hash_with("alarm", false) == hash_with("alarm", true));
    CHECK(hash_with(kLong, false) != hash_with(kLong + "?", false));
}

TEST_CASE("blackboard values: a shared blackboard publishes a string to its squad") {
    const Registry reg = barks();
    const Tree tree = TreeBuilder("member", reg)
                          .shared_key<std::string>("squad", "order", std::string("hold"))
                          .active_selector()
                              .sequence().label("charge").condition(eq("squad.order", "charge")).action("Shout").back()
                              .action("Idle")
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        World world;
        SharedBlackboard& squad = world.create_shared("squad-1");
        const AgentHandle a = world.spawn(tree, {.mode = mode, .shared = {{"squad", &squad}}});
        CHECK(squad.get<std::string>("order") == "hold");
        world.step(50ms);
        squad.set("order", kLong);
        CHECK(squad.pending<std::string>("order") == kLong);
        CHECK(squad.get<std::string>("order") == "hold");
        world.step(50ms);
        CHECK(world.at(a).blackboard().get<std::string>("squad.order") == kLong);
        world.at(a).blackboard().set("squad.order", "charge");  // an agent's write goes to the squad
        world.step(50ms);  // published at the start of this step
        CHECK(squad.get<std::string>("order") == "charge");
        CHECK(world.at(a).status(tree.find("charge/Shout")) == Status::Running);
    }
    World world;
    SharedBlackboard& other = world.create_shared("other");
    other.declare<std::string>("order", "advance");
    CHECK_THROWS_WITH_AS(world.spawn(tree, {.shared = {{"squad", &other}}}),
                         "World::spawn(): shared blackboard 'other': key 'order' was declared with the initial value 'advance', "
                         "but tree 'member' declares 'squad.order' with 'hold' (declare it once: in the tree, or on the shared "
                         "blackboard with the same value)",
                         UsageError);
}

TEST_CASE("blackboard values: comparisons of strings and enums; ordering refused") {
    Registry reg = barks();
    reg.add_enum<game::Stance>("GameStance", {{"Idle", game::Stance::Idle}, {"Alert", game::Stance::Alert}, {"Combat", game::Stance::Combat}});
    const Tree tree = TreeBuilder("stance", reg)
                          .key<game::Stance>("stance")
                          .active_selector()
                              .sequence().label("alert").condition(ne("stance", game::Stance::Idle)).action("Shout").back()
                              .action("Idle")
                          .back()
                          .end();
    Agent agent(tree);
    agent.tick(50ms);
    CHECK(agent.status(tree.find("Idle")) == Status::Running);
    agent.blackboard().set("stance", game::Stance::Combat);
    agent.tick(50ms);
    CHECK(agent.status(tree.find("alert/Shout")) == Status::Running);

    auto build_error = [&](Predicate p) -> std::string {
        try {
            TreeBuilder("t", reg).key<std::string>("bark").key<game::Stance>("stance").sequence().condition(p).back().end();
        } catch (const BuildError& e) {
            return e.what();
        }
        return "";
    };
    CHECK(build_error(lt("bark", "m")) ==
          "tree 't', node /Sequence/Condition 'bark < m'[0]: comparison 'bark < m' orders values, which only number keys (int, "
          "unsigned, long, long long, float or double) have; 'bark' is declared as std::string: compare it with == or !=");
    CHECK(build_error(eq("bark", 5)) ==
          "tree 't', node /Sequence/Condition 'bark == 5'[0]: comparison 'bark == 5': the value is int, but key 'bark' is "
          "declared as std::string (compare it with a value of its type)");
    CHECK(build_error(eq("stance", "Alert")) ==
          "tree 't', node /Sequence/Condition 'stance == Alert'[0]: comparison 'stance == Alert': the value is std::string, "
          "but key 'stance' is declared as game::Stance (compare it with a value of its type)");
}

TEST_CASE("blackboard values: enums named twice, names refused") {
    Registry reg;
    reg.add_enum<game::Stance>("GameStance", {{"Idle", game::Stance::Idle}, {"Alert", game::Stance::Alert}, {"Combat", game::Stance::Combat}});
    // The same again (every registry of a program may add it) is fine.
    reg.add_enum<game::Stance>("GameStance", {{"Idle", game::Stance::Idle}, {"Alert", game::Stance::Alert}, {"Combat", game::Stance::Combat}});
    CHECK_THROWS_WITH_AS(reg.add_enum<game::Stance>("Posture", {{"Idle", game::Stance::Idle}}),
                         "game::Stance is already named 'GameStance', not 'Posture'", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_enum<game::Stance>("GameStance", {{"Idle", game::Stance::Idle}}),
                         "enum 'GameStance' is added again with other value names", BuildError);
    enum class Other { A };
    CHECK_THROWS_WITH_AS(reg.add_enum<Other>("GameStance", {{"A", Other::A}}), "the type name 'GameStance' is already given to game::Stance",
                         BuildError);
    CHECK_THROWS_WITH_AS(reg.add_enum<Other>("Other", {{"A", Other::A}, {"A", Other::A}}),
                         "enum 'Other': the value name 'A' is given twice", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_enum<Other>("Other", {{"not a name", Other::A}}),
                         "enum 'Other': 'not a name' is not a valid value name (an identifier)", BuildError);
}

TEST_CASE("blackboard values: a user type with the BlackboardValue opt-in") {
    const Registry reg = barks();
    const Tree tree = TreeBuilder("packer", reg)
                          .key<game::Loadout>("loadout", game::Loadout{{1, 2, 3}})
                          .sequence().condition(ne("loadout", game::Loadout{})).action("Shout").back()
                          .end();
    Agent agent(tree);
    CHECK(agent.blackboard().get<game::Loadout>("loadout").items == std::vector<int>{1, 2, 3});
    agent.tick(50ms);
    CHECK(agent.status(tree.find("Shout")) == Status::Running);
    CHECK(agent.blackboard().set("loadout", game::Loadout{}));
    CHECK_FALSE(agent.blackboard().set("loadout", game::Loadout{}));  // equal (operator==): not a change
    Agent empty(tree, {.blackboard = {{"loadout", game::Loadout{}}}});
    empty.tick(50ms);
    CHECK(empty.status(tree.find("Shout")) == Status::Invalid);
    // The state hash reads BlackboardValue<Loadout>::hash: equal lists hash equal.
    auto hash_of = [&](game::Loadout l) {
        World world;
        world.spawn(tree, {.blackboard = {{"loadout", l}}});
        return world.state_hash();
    };
    CHECK(hash_of(game::Loadout{{4, 5}}) == hash_of(game::Loadout{{4, 5}}));
    CHECK(hash_of(game::Loadout{{4, 5}}) != hash_of(game::Loadout{{5, 4}}));
}
