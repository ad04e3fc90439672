// A small game server loop, written the way a game uses ebt: two kinds of NPC in one World at 20 Hz,
// a latent move that the game's movement system finishes through World::resume, a village alarm on a
// shared blackboard, each NPC reached from its actions through its user pointer, and one guard's
// branches followed through a listener that names nodes found by name. Prints what happens.
#include <ebt/ebt.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

using namespace std::chrono_literals;

struct Npc {
    const char* name;
    float x;
    float goal = 0;
    ebt::ResumeHandle move = {};  // the MoveTo run the movement system finishes (stale once it ended)
};

// The game's movement system: walks NPCs toward their goals at 4 units/s, then resumes their move.
struct Movement {
    std::vector<Npc*> walking;
    void step(ebt::World& world, float dt) {
        std::erase_if(walking, [&](Npc* n) {
            if (std::abs(n->goal - n->x) > 4 * dt) return (n->x += std::copysign(4 * dt, n->goal - n->x)), false;
            n->x = n->goal;
            world.resume(n->move, ebt::Status::Success);  // false, harmlessly, if the run was cut
            return true;
        });
    }
};

int main() {
    Movement movement;
    ebt::Registry actions;
    actions.add_latent_action("MoveTo", {
        .start = [&](ebt::ActionContext& ctx, const ebt::ResumeHandle& run) {
            Npc& npc = ctx.user<Npc>();
            npc.goal = ctx.in<float>("to");
            npc.move = run;
            movement.walking.push_back(&npc);
        },
        .on_terminate = [&](ebt::ActionContext& ctx, ebt::Status s) {
            if (s == ebt::Status::Aborted) std::erase(movement.walking, &ctx.user<Npc>());
        },
        .ports = {ebt::input_port<float>("to")}});
    actions.add_action("Shout", [](ebt::ActionContext& ctx) {
        ctx.out("alarm", true);
        ctx.out("where", ctx.user<Npc>().x);
        std::printf("%5.2f s  %s shouts: wolf at %.1f!\n", static_cast<double>(ctx.now()) / 1e6, ctx.user<Npc>().name, ctx.user<Npc>().x);
        return ebt::Status::Success;
    }, {ebt::output_port<bool>("alarm"), ebt::output_port<float>("where")});

    ebt::Tree villager = ebt::TreeBuilder("villager", actions)
        .key<bool>("wolf_near").key<float>("home")
        .shared_key<bool>("village", "alarm").shared_key<float>("village", "alarm_at")
        .active_selector()
            .sequence({.label = "flee"}).check("wolf_near")
                .action("Shout", {{"alarm", "village.alarm"}, {"where", "village.alarm_at"}})
                .action("MoveTo", {{"to", "home"}}).back()
            .sequence({.label = "work"})
                .action("MoveTo").port_value("to", 20.0f).wait(1s).action("MoveTo", {{"to", "home"}}).back()
        .back().end();
    ebt::Tree guard = ebt::TreeBuilder("guard", actions)
        .shared_key<bool>("village", "alarm").shared_key<float>("village", "alarm_at")
        .active_selector()
            .sequence({.label = "respond", .abort = ebt::AbortMode::Both}).check("village.alarm")  // until it is down
                .action("MoveTo", {{"to", "village.alarm_at"}}).wait(2s).back()
            .sequence({.label = "patrol"})
                .action("MoveTo").port_value("to", 0.0f).action("MoveTo").port_value("to", 10.0f).back()
        .back().end();

    // Follow one guard's two branches, found by name (not by pre-order index).
    struct Follow : ebt::TraceListener {
        const ebt::World& world;
        const Npc& npc;
        std::vector<ebt::NodeRef> nodes;
        const ebt::Tree& tree;
        Follow(const ebt::World& w, const Npc& n, const ebt::Tree& t, std::vector<ebt::NodeRef> followed)
            : world(w), npc(n), nodes(std::move(followed)), tree(t) {}
        void on_event(const ebt::TraceEvent& e) override {
            if (e.kind != ebt::TraceKind::Initialize && e.kind != ebt::TraceKind::Terminate) return;
            if (std::ranges::find(nodes, tree.node(e.node)) == nodes.end()) return;
            std::printf("%5.2f s  %s %-8s %s\n", static_cast<double>(world.now()) / 1e6, npc.name, tree.label(e.node).c_str(),
                        e.kind == ebt::TraceKind::Initialize ? "starts" : ebt::to_string(e.status));
        }
    };

    ebt::World world;
    ebt::SharedBlackboard& village = world.create_shared("village");
    std::vector<Npc> npcs = {{"Ada", 2}, {"Bo", 8}, {"Cy", 5}};
    Follow follow(world, npcs[0], guard, {guard.find("respond"), guard.find("patrol")});
    const ebt::AgentHandle ada = world.spawn(guard, {.listener = &follow, .user = &npcs[0], .shared = {{"village", &village}}});
    world.spawn(guard, {.user = &npcs[1], .shared = {{"village", &village}}});
    const ebt::AgentHandle cy = world.spawn(villager, {.user = &npcs[2], .shared = {{"village", &village}},
                                                      .blackboard = {{"home", 5.0f}}});

    for (int frame = 0; frame < 200; ++frame) {  // 10 s at 20 Hz
        if (frame == 60) world.at(cy).blackboard().set("wolf_near", true);  // the game's perception
        if (frame == 70) world.at(cy).blackboard().set("wolf_near", false);
        if (frame == 140) village.set("alarm", false);                       // the wolf was driven off
        movement.step(world, 0.05f);
        world.step(50ms);
    }
    std::printf("after 10 s: Ada at %.1f, Bo at %.1f, Cy at %.1f, alarm %s, Ada %s\n", npcs[0].x, npcs[1].x, npcs[2].x,
                village.get<bool>("alarm") ? "up" : "down", world.alive(ada) ? "alive" : "gone");
}
