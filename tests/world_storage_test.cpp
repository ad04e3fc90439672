// The World's storage: where a World's agents keep their state blocks (engine/world/state_block_pool.hpp).
// An agent spawned into a World takes its block from the World's pool, at its slot's place, so that
// the blocks of neighbouring slots are neighbours in memory; an Agent made on its own keeps a heap
// block. White-box: a block's address is seen through its blackboard's values (EngineAccess::raw_values),
// which sit at a fixed offset in the block.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"
#include "support/mover_tree.hpp"
#include "support/trace_recorder.hpp"
#include "support/tree_data.hpp"

#include "world/state_block_pool.hpp"  // StateBlockPool::blocks_per_page

#include <ebt/detail/engine_access.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// Where `a`'s state block is, as its blackboard's values.
const std::byte* block_of(const Agent& a) { return detail::EngineAccess::raw_values(a.blackboard()); }

std::size_t block_bytes(const Agent& a) { return a.memory_bytes() - sizeof(Agent); }

Registry guard_registry() {
    Registry reg;
    scenarios::register_guard_actions(reg);
    return reg;
}

/// A tree of another block size than the guard tree: a counter key and one running action.
Tree counter_tree() {
    return TreeBuilder("counter").key<int>("mark", 0).key<double>("spare", 0.0).action("Run", test::running_action()).end();
}

/// A value whose copy throws while `refuse_copies` is set, or once `copies_before_refusal` (when not
/// negative) more copies were made: the copy of a key's initial value into a new agent's block then
/// fails half-way through the agent's construction, or a chosen later copy fails. `copies_made`
/// counts every copy.
bool refuse_copies = false;
int copies_before_refusal = -1;
int copies_made = 0;
void copying() {
    ++copies_made;
    if (refuse_copies || copies_before_refusal == 0) throw std::runtime_error("copy refused");
    if (copies_before_refusal > 0) --copies_before_refusal;
}
struct Fragile {
    int value = 0;
    Fragile() = default;
    explicit Fragile(int v) : value(v) {}
    Fragile(const Fragile& other) : value(other.value) { copying(); }
    Fragile& operator=(const Fragile& other) {
        copying();
        value = other.value;
        return *this;
    }
    friend bool operator==(const Fragile&, const Fragile&) = default;
};

/// A tree whose blackboard holds strings, which a byte copy of a block does not copy (a short one
/// points into itself, a long one owns its heap buffer): moving such an agent's block copies them.
Tree labelled_tree() {
    return TreeBuilder("labelled")
        .key<std::string>("short_label", "")
        .key<std::string>("long_label", "")
        .key<int>("mark", 0)
        .action("Run", test::running_action())
        .end();
}

}  // namespace

template <> struct ebt::BlackboardValue<Fragile> {
    static std::uint64_t hash(const Fragile& v) noexcept { return static_cast<std::uint64_t>(v.value); }
    static void save(const Fragile& v, ebt::ValueWriter& out) { out.i64(v.value); }
    static void load(ebt::ValueReader& in, Fragile& out) { out.value = static_cast<int>(in.i64()); }
};

TEST_CASE("world storage: the state blocks of a World's agents sit side by side in slot order, and a reused slot gets its block back") {
    const Registry reg = guard_registry();
    const Tree tree = scenarios::guard_tree(reg);
    World world;
    std::vector<AgentHandle> agents;
    for (int i = 0; i < 64; ++i) agents.push_back(world.spawn(tree));
    const std::size_t bytes = block_bytes(world.at(agents[0]));
    CHECK(bytes == 96);
    for (std::size_t i = 1; i < agents.size(); ++i) {
        CAPTURE(i);
        CHECK(block_of(world.at(agents[i])) - block_of(world.at(agents[i - 1])) == static_cast<std::ptrdiff_t>(bytes));
    }
    // A slot freed and taken again: the new agent's block is where the old one's was.
    const std::byte* place = block_of(world.at(agents[10]));
    REQUIRE(world.despawn(agents[10]));
    const AgentHandle again = world.spawn(tree);
    REQUIRE(again.index == agents[10].index);
    CHECK(block_of(world.at(again)) == place);
    // The memory footprint per agent is what an Agent of its own has: the Agent and its block.
    const Agent alone(tree);
    CHECK(world.at(again).memory_bytes() == alone.memory_bytes());
    CHECK(alone.memory_bytes() <= 256);
}

// The single-threaded loop finds each slot through the chunk it is in (World::SlotCursor: chunks of
// 32, 64, 128, 256 slots here, whose ends fall in the middle of 64-slot words of awake bits), and the
// rest of a word's awake bits after each tick (bit 63 included). 300 agents with a budget of 120 a
// frame: the round robin's frames start at slots 0, 120 and 240, and the third one goes on from
// slot 0 again after slot 299 (the step's second pass). Every update must come from the right agent
// (its seed is its slot), in slot order, with the time since that agent's last tick as its dt.
// (Fails with a cursor that takes a chunk for larger than it is: checked by breaking it on purpose.)
TEST_CASE("world storage: the serial loop steps the slots of every chunk in order, a budget's second pass from slot 0 included") {
    struct Mark {
        std::uint64_t seed;
        Duration dt;
    };
    static std::vector<Mark> marks;
    marks.clear();
    Registry reg;
    reg.add_action("Mark", [](ActionContext& ctx) {
        marks.push_back({ctx.agent().seed(), ctx.dt()});
        return Status::Running;
    });
    const Tree tree = TreeBuilder("mark", reg).action("Mark").end();
    constexpr std::uint32_t kAgents = 300;
    constexpr std::uint32_t kBudget = 120;
    World world;
    for (std::uint32_t i = 0; i < kAgents; ++i) REQUIRE(world.spawn(tree, {.seed = i}).index == i);
    world.set_agent_budget(kBudget);
    std::vector<int> last_frame(kAgents, -1);  // the frame of each agent's last tick (-1: it joined at time 0)
    std::uint32_t cursor = 0;
    for (int frame = 0; frame < 8; ++frame) {
        CAPTURE(frame);
        marks.clear();
        const FrameMetrics m = world.step(50ms);
        CHECK(m.agents_stepped == kBudget);
        REQUIRE(marks.size() == kBudget);
        for (std::uint32_t k = 0; k < kBudget; ++k) {
            const std::uint32_t expected = (cursor + k) % kAgents;
            CAPTURE(k);
            CHECK(marks[k].seed == expected);
            CHECK(marks[k].dt == Duration(50ms) * (frame - last_frame[expected]));
            last_frame[expected] = frame;
        }
        cursor = (cursor + kBudget) % kAgents;
    }
}

TEST_CASE("world storage: a large state block (wide_64's) stays on the heap and runs the same as an Agent of its own") {
    const Registry reg = guard_registry();
    const Tree wide = scenarios::wide_guard_tree(reg, 64);
    REQUIRE(block_bytes(Agent(wide)) > 512);  // above StateBlockPool::kLargestBlock
    World world;
    const AgentHandle a = world.spawn(wide);
    const AgentHandle b = world.spawn(wide);
    // Not side by side at the block's size, as pool blocks are: each is its own heap allocation (a
    // heap block is larger than the layout's bytes, and the allocator's header sits between two).
    CHECK(block_of(world.at(b)) - block_of(world.at(a)) != static_cast<std::ptrdiff_t>(block_bytes(world.at(a))));
    test::TraceRecorder in_world, alone_trace;
    world.set_listener(b, &in_world);
    Agent alone(wide, {.listener = &alone_trace});
    for (int frame = 0; frame < 3; ++frame) {
        if (frame == 1) {
            world.at(b).blackboard().set("threat_63", true);
            alone.blackboard().set("threat_63", true);
        }
        world.step(std::chrono::milliseconds(50));
        alone.tick(std::chrono::milliseconds(50));
    }
    CHECK(in_world.lifecycle().size() > 6);  // started, then threat_63 aborted Patrol for Attack
    CHECK(in_world.lifecycle() == alone_trace.lifecycle());
    CHECK(world.at(b).memory_bytes() == alone.memory_bytes());
    REQUIRE(world.despawn(a));
    CHECK(world.at(b).status() == Status::Running);
}

TEST_CASE("world storage: agents of two block sizes, spawned, despawned and respawned in any order, keep their own state") {
    const Registry reg = guard_registry();
    const Tree guard = scenarios::guard_tree(reg);
    const Tree counter = counter_tree();
    REQUIRE(block_bytes(Agent(guard)) != block_bytes(Agent(counter)));
    World world;
    std::vector<AgentHandle> agents;
    // Slots 0..199: guard, counter, guard, ... (both sizes share every page's slot range).
    for (int i = 0; i < 200; ++i) agents.push_back(world.spawn(i % 2 ? counter : guard));
    const auto mark_all = [&] {
        for (std::size_t i = 0; i < agents.size(); ++i) {
            Agent& a = world.at(agents[i]);
            if (a.tree().name() == "counter") a.blackboard().set("mark", static_cast<int>(i));
            else a.blackboard().set("enemy_seen", i % 3 == 0);
        }
    };
    const auto check_all = [&] {
        for (std::size_t i = 0; i < agents.size(); ++i) {
            CAPTURE(i);
            const Agent& a = world.at(agents[i]);
            if (a.tree().name() == "counter") CHECK(a.blackboard().get<int>("mark") == static_cast<int>(i));
            else CHECK(a.blackboard().get<bool>("enemy_seen") == (i % 3 == 0));
        }
    };
    mark_all();
    world.step(50ms);
    world.step(50ms);
    check_all();
    // Every third agent leaves; the freed slots are taken by agents of the other tree.
    for (std::size_t i = 0; i < agents.size(); i += 3) {
        const bool was_counter = world.at(agents[i]).tree().name() == "counter";
        REQUIRE(world.despawn(agents[i]));
        agents[i] = world.spawn(was_counter ? guard : counter);
    }
    mark_all();
    for (int frame = 0; frame < 3; ++frame) world.step(50ms);
    check_all();
    CHECK(world.size() == 200);
    for (const AgentHandle h : agents) CHECK(world.at(h).status() == Status::Running);
}

TEST_CASE("world storage: a spawn that fails while its agent's block is being filled gives the block back; the world stays usable") {
    TreeBuilder b("fragile");
    b.key<Fragile>("thing", Fragile{}).action("Run", test::running_action());
    const Tree tree = b.end();
    World world;
    const AgentHandle first = world.spawn(tree);
    refuse_copies = true;
    CHECK_THROWS_WITH_AS(world.spawn(tree), "copy refused", std::runtime_error);
    refuse_copies = false;
    CHECK(world.size() == 1);
    // The failed spawn's slot (1) and its block are taken by the next spawn.
    const AgentHandle second = world.spawn(tree);
    CHECK(second.index == 1);
    CHECK(block_of(world.at(second)) - block_of(world.at(first)) == static_cast<std::ptrdiff_t>(block_bytes(world.at(first))));
    world.step(16ms);
    CHECK(world.at(second).status() == Status::Running);
    CHECK(world.despawn(first));
    CHECK(world.despawn(second));
    CHECK(world.size() == 0);
}

TEST_CASE("world storage: a spawn of a frame that cannot join at its end is cancelled; the frame's other spawns join and step() throws once the frame is finished") {
    // An action spawns two agents of the fragile tree and a counter in frame 1; at the frame's end the
    // first joins (one copy of the key's initial value), the second's copy throws, the counter joins.
    TreeBuilder b("fragile");
    b.key<Fragile>("thing", Fragile{}).action("Run", test::running_action());
    const Tree fragile = b.end();
    World world;
    std::vector<AgentHandle> spawned;
    ActionSpec spawner = test::running_action();
    spawner.update = [&](ActionContext&) {
        if (world.frame() == 1) {
            spawned.push_back(world.spawn(fragile));
            spawned.push_back(world.spawn(fragile));
            spawned.push_back(world.spawn(counter_tree()));
            copies_before_refusal = 1;
        }
        return Status::Running;
    };
    const AgentHandle boss = world.spawn(TreeBuilder("boss").action("Spawn", spawner).end());
    world.step(10ms);  // frame 0
    CHECK_THROWS_WITH_AS(world.step(10ms), "copy refused", std::runtime_error);
    copies_before_refusal = -1;
    CHECK(world.frame() == 2);
    REQUIRE(spawned.size() == 3);
    CHECK(world.agent(spawned[0]) != nullptr);
    CHECK_FALSE(world.alive(spawned[1]));  // cancelled: stale, as a despawn before joining makes it
    CHECK(world.agent(spawned[2]) != nullptr);
    CHECK(world.size() == 3);
    CHECK(world.handles() == std::vector<AgentHandle>{boss, spawned[0], spawned[2]});
    CHECK(world.step(10ms).agents_stepped == 3);
    // The cancelled spawn's slot is free again, with a new generation.
    const AgentHandle next = world.spawn(fragile);
    CHECK(next.index == spawned[1].index);
    CHECK(next.generation == spawned[1].generation + 1);
    CHECK(world.size() == 4);
}

TEST_CASE("world storage: a shared value whose copy throws as the step publishes: the step throws, and that blackboard and the later ones publish in the next step") {
    World world;
    SharedBlackboard& first = world.create_shared("first");
    first.declare<Fragile>("thing");
    SharedBlackboard& second = world.create_shared("second");
    second.declare<int>("n");
    world.step(10ms);
    first.set("thing", Fragile{7});
    second.set("n", 5);
    refuse_copies = true;  // the publish's copy of the pending value into the published one
    CHECK_THROWS_WITH_AS(world.step(10ms), "copy refused", std::runtime_error);
    refuse_copies = false;
    CHECK(world.frame() == 2);
    CHECK(first.get<Fragile>("thing").value == 0);
    CHECK(second.get<int>("n") == 0);  // not reached by the publish that threw
    world.step(10ms);
    CHECK(first.get<Fragile>("thing").value == 7);
    CHECK(second.get<int>("n") == 5);
}

namespace {

/// For each agent at `handles` (consecutive slots) after the first: whether its block comes right
/// after the previous one's, as the World's pool places the blocks of one page (a page holds 64 guard
/// blocks, fewer larger ones).
std::vector<bool> adjacency(World& world, const std::vector<AgentHandle>& handles) {
    std::vector<bool> out;
    for (std::size_t i = 1; i < handles.size(); ++i) {
        REQUIRE(handles[i].index == handles[i - 1].index + 1);
        const std::ptrdiff_t step = block_of(world.at(handles[i])) - block_of(world.at(handles[i - 1]));
        out.push_back(step == static_cast<std::ptrdiff_t>(block_bytes(world.at(handles[i]))));
    }
    return out;
}

/// Whether the agents at `handles` (consecutive slots in one page) have their blocks side by side.
bool side_by_side(World& world, const std::vector<AgentHandle>& handles) {
    const std::vector<bool> a = adjacency(world, handles);
    return std::all_of(a.begin(), a.end(), [](bool b) { return b; });
}

}  // namespace

TEST_CASE("world storage: a restored world's agents move into its pool, strings and all, and run as the saved world does") {
    const Registry reg = guard_registry();
    const std::vector<Tree> trees{scenarios::guard_tree(reg), labelled_tree()};
    World saved;
    std::vector<AgentHandle> guards, labelled;
    for (int i = 0; i < 40; ++i) guards.push_back(saved.spawn(trees[0]));
    for (int i = 0; i < 40; ++i) labelled.push_back(saved.spawn(trees[1]));
    for (std::size_t i = 0; i < labelled.size(); ++i) {
        Blackboard& bb = saved.at(labelled[i]).blackboard();
        bb.set("short_label", "s" + std::to_string(i));                                  // kept inside the string
        bb.set("long_label", "a label far too long to be kept inside the string " + std::to_string(i));  // on the heap
        bb.set("mark", static_cast<int>(i));
    }
    saved.step(50ms);
    saved.at(guards[7]).blackboard().set("enemy_seen", true);
    saved.step(50ms);
    World restored;
    restore_world(restored, trees, save_world(saved));
    REQUIRE(restored.handles() == saved.handles());
    CHECK(side_by_side(restored, guards));
    // Laid out as spawning them placed them: side by side within each page of the pool. (Whether one
    // page happens to follow another in memory is the allocator's choice, in either world: not checked.)
    const std::size_t per_page = detail::StateBlockPool::blocks_per_page(block_bytes(saved.at(labelled[0])));
    const std::vector<bool> spawned_layout = adjacency(saved, labelled);
    const std::vector<bool> restored_layout = adjacency(restored, labelled);
    std::size_t pairs_within_pages = 0;
    for (std::size_t i = 1; i < labelled.size(); ++i) {
        if (labelled[i].index / per_page != labelled[i - 1].index / per_page) continue;
        ++pairs_within_pages;
        CAPTURE(i);
        CHECK(spawned_layout[i - 1]);
        CHECK(restored_layout[i - 1]);
    }
    CHECK(pairs_within_pages >= 20);
    for (std::size_t i = 0; i < labelled.size(); ++i) {
        CAPTURE(i);
        const Blackboard& bb = restored.at(labelled[i]).blackboard();
        CHECK(bb.get<std::string>("short_label") == "s" + std::to_string(i));
        CHECK(bb.get<std::string>("long_label") == "a label far too long to be kept inside the string " + std::to_string(i));
        CHECK(bb.get<int>("mark") == static_cast<int>(i));
    }
    CHECK(restored.state_hash() == saved.state_hash());
    for (int frame = 0; frame < 4; ++frame) {
        if (frame == 1) {
            saved.at(guards[3]).blackboard().set("enemy_seen", true);
            restored.at(guards[3]).blackboard().set("enemy_seen", true);
        }
        saved.step(50ms);
        restored.step(50ms);
        CHECK(restored.state_hash() == saved.state_hash());
    }
    // A restored agent's block goes back to the pool like a spawned one's: its slot's next agent gets it.
    const std::byte* place = block_of(restored.at(guards[5]));
    REQUIRE(restored.despawn(guards[5]));
    const AgentHandle again = restored.spawn(trees[0]);
    REQUIRE(again.index == guards[5].index);
    CHECK(block_of(restored.at(again)) == place);
}

TEST_CASE("world storage: a migrated squad and agents restarted by a reload move into the pool at their slots' places") {
    const Registry reg = guard_registry();
    const Tree guard = scenarios::guard_tree(reg);
    World from, to;
    std::vector<AgentHandle> squad, residents;
    for (int i = 0; i < 4; ++i) squad.push_back(from.spawn(guard));
    for (int i = 0; i < 4; ++i) residents.push_back(to.spawn(guard));
    from.step(50ms);
    to.step(50ms);
    const std::vector<std::byte> bytes = save_agents(from, squad);
    for (const AgentHandle h : squad) REQUIRE(from.despawn(h));
    std::vector<AgentHandle> arrived = restore_agents(to, std::span(&guard, 1), bytes);
    std::vector<AgentHandle> all = residents;
    all.insert(all.end(), arrived.begin(), arrived.end());
    CHECK(side_by_side(to, all));  // slots 0..7 of one page, the squad in 4..7
    to.step(50ms);
    for (const AgentHandle h : all) CHECK(to.at(h).status() == Status::Running);

    // A reload with a new shape restarts each agent of the tree as a new Agent: in the pool as well.
    World reloading;
    std::vector<AgentHandle> counters;
    for (int i = 0; i < 6; ++i) counters.push_back(reloading.spawn(counter_tree()));
    for (std::size_t i = 0; i < counters.size(); ++i) reloading.at(counters[i]).blackboard().set("mark", static_cast<int>(i));
    reloading.step(50ms);
    const Tree reshaped = TreeBuilder("counter")
                              .key<int>("mark", 0)
                              .key<double>("spare", 0.0)
                              .key<int>("extra", 0)
                              .sequence()
                              .action("Run", test::running_action())
                              .back()
                              .end();
    const ReloadReport report = reloading.reload(reshaped);
    CHECK(report.agents_restarted == 6);
    CHECK(side_by_side(reloading, counters));
    reloading.step(50ms);
    for (std::size_t i = 0; i < counters.size(); ++i) {
        CAPTURE(i);
        CHECK(reloading.at(counters[i]).blackboard().get<int>("mark") == static_cast<int>(i));  // carried over
        CHECK(reloading.at(counters[i]).status() == Status::Running);
    }
}

TEST_CASE("world storage: a restored agent whose block cannot be moved (a value's copy throws) keeps its own block and runs the same") {
    TreeBuilder b("fragile");
    b.key<Fragile>("thing", Fragile{}).action("Run", test::running_action());
    const std::vector<Tree> trees{b.end()};
    World saved;
    const AgentHandle first = saved.spawn(trees[0]);
    const AgentHandle second = saved.spawn(trees[0]);
    saved.at(first).blackboard().set("thing", Fragile{11});
    saved.at(second).blackboard().set("thing", Fragile{22});
    saved.step(16ms);
    const std::vector<std::byte> bytes = save_world(saved);

    // Count the copies a restore makes; the last is the second agent's block moving into the pool.
    World counted;
    copies_made = 0;
    restore_world(counted, trees, bytes);
    const int copies = copies_made;
    REQUIRE(copies >= 2);
    CHECK(side_by_side(counted, {first, second}));

    // The same restore with that last copy refused: the first agent moved, the second kept its block.
    World refused;
    copies_before_refusal = copies - 1;
    restore_world(refused, trees, bytes);
    CHECK(copies_before_refusal == 0);
    copies_before_refusal = -1;
    CHECK_FALSE(side_by_side(refused, {first, second}));
    CHECK(refused.at(second).blackboard().get<Fragile>("thing").value == 22);
    CHECK(refused.state_hash() == counted.state_hash());
    for (int frame = 0; frame < 3; ++frame) {
        counted.step(16ms);
        refused.step(16ms);
        CHECK(refused.state_hash() == counted.state_hash());
    }
    CHECK(refused.at(second).status() == Status::Running);
    const AgentHandle third = refused.spawn(trees[0]);  // slot 2: two blocks after the first's, in the pool
    CHECK(block_of(refused.at(third)) - block_of(refused.at(first)) == 2 * static_cast<std::ptrdiff_t>(block_bytes(refused.at(first))));
    REQUIRE(refused.despawn(second));  // its own block goes back to the heap, not to the pool
    CHECK(refused.size() == 2);
}

struct ebt::WorldStorageTestAccess {
    static bool prefetches_blocks(const World& world) { return world.prefetch_blocks_; }
    /// The world's count of awake slots, and the bits its awake set has: equal unless the count is off.
    static std::uint32_t awake_count(const World& world) { return world.awake_count_; }
    static std::uint32_t awake_bits(const World& world) {
        std::uint32_t bits = 0;
        for (const std::uint64_t word : world.awake_) bits += static_cast<std::uint32_t>(std::popcount(word));
        return bits;
    }
};

TEST_CASE("world storage: resume_all counts each woken slot once, whether it was asleep or awake already") {
    // World::resume_all sets a resumed agent's awake bit and counts it when the bit was clear: agents
    // asleep in their moves, agents a write woke before the resumes (their bit set already), an agent
    // resumed twice in the list (refused the second time) and a slot in a later chunk than the rest.
    Registry registry;
    std::vector<ResumeHandle> moves(70);
    const Tree tree = test::mover_tree(registry, moves);
    World world;
    std::vector<AgentHandle> agents;
    for (std::uint64_t i = 0; i < moves.size(); ++i) agents.push_back(world.spawn(tree, {.seed = i}));
    world.step(50ms);
    world.step(50ms);
    using Access = WorldStorageTestAccess;
    CHECK(Access::awake_count(world) == 0);  // every agent asleep in its move
    for (const std::size_t i : {3, 5, 40}) world.agent(agents[i])->blackboard().set("alarm", true);
    CHECK(Access::awake_count(world) == 3);
    const std::vector<ResumeHandle> list{moves[1], moves[3], moves[2], moves[5], moves[66], moves[1], moves[40], moves[6]};
    CHECK(world.resume_all(list, Status::Success) == 7);
    CHECK(Access::awake_count(world) == 7);  // 1, 2, 3, 5, 6, 40, 66
    CHECK(Access::awake_bits(world) == 7);
    world.step(50ms);  // the resumed moves end; the alarmed agents shout
    CHECK(Access::awake_count(world) == Access::awake_bits(world));
    world.step(50ms);  // the ended moves restart, and those agents sleep again
    CHECK(Access::awake_count(world) == 3);
    CHECK(Access::awake_bits(world) == 3);
}

TEST_CASE("world storage: the loops prefetch the blocks ahead once an agent with a large block has joined, by any way of joining") {
    const Registry reg = guard_registry();
    const Tree guard = scenarios::guard_tree(reg);
    const Tree wide = scenarios::wide_guard_tree(reg, 16);
    REQUIRE(test::data_of(guard).layout.block_bytes <= 128);  // (World::kPrefetchBlockBytes)
    REQUIRE(test::data_of(wide).layout.block_bytes > 128);
    using Access = WorldStorageTestAccess;

    SUBCASE("spawned") {
        World world;
        for (int i = 0; i < 20; ++i) world.spawn(guard);
        world.step(50ms);
        CHECK_FALSE(Access::prefetches_blocks(world));
        world.spawn(wide);
        CHECK(Access::prefetches_blocks(world));
    }
    SUBCASE("restored, migrated, reloaded") {
        World saved;
        for (int i = 0; i < 4; ++i) saved.spawn(wide);
        saved.step(50ms);
        const std::vector<Tree> trees{guard, wide};
        World restored;
        restore_world(restored, trees, save_world(saved));
        CHECK(Access::prefetches_blocks(restored));

        World to;
        for (int i = 0; i < 4; ++i) to.spawn(guard);
        to.step(50ms);  // (at the saved agents' frame)
        REQUIRE_FALSE(Access::prefetches_blocks(to));
        restore_agents(to, trees, save_agents(saved, saved.handles()));
        CHECK(Access::prefetches_blocks(to));

        World reloading;
        for (int i = 0; i < 4; ++i) reloading.spawn(guard);
        reloading.step(50ms);
        REQUIRE_FALSE(Access::prefetches_blocks(reloading));
        CHECK(reloading.reload(guard.name(), wide).agents_restarted == 4);
        CHECK(Access::prefetches_blocks(reloading));
    }
}

TEST_CASE("world storage: a world that prefetches blocks steps as one that does not, with slots ahead empty, despawned or reused") {
    // Two worlds of the same agents, one with a large-block agent spawned first (and despawned at
    // once) so that its loops prefetch: the same ticks, results and state. Agents despawn themselves
    // and others during the frames, so that the slots ahead of the one being ticked are empty or reused.
    const Registry reg = guard_registry();
    const Tree guard = scenarios::guard_tree(reg);
    const Tree wide = scenarios::wide_guard_tree(reg, 16);
    World plain, prefetching;
    const AgentHandle plain_wide = plain.spawn(guard);
    const AgentHandle big = prefetching.spawn(wide);
    REQUIRE(WorldStorageTestAccess::prefetches_blocks(prefetching));
    std::vector<AgentHandle> a, b;
    for (int i = 0; i < 300; ++i) {
        a.push_back(plain.spawn(guard, {.seed = static_cast<std::uint64_t>(i)}));
        b.push_back(prefetching.spawn(guard, {.seed = static_cast<std::uint64_t>(i)}));
    }
    REQUIRE(plain.despawn(plain_wide));
    REQUIRE(prefetching.despawn(big));
    for (int frame = 0; frame < 30; ++frame) {
        CAPTURE(frame);
        for (int k = 0; k < 5; ++k) {
            const auto i = static_cast<std::size_t>((frame * 37 + k * 61) % 300);
            if (plain.alive(a[i])) {
                REQUIRE(prefetching.alive(b[i]));
                const bool seen = (frame + k) % 2 == 0;
                plain.at(a[i]).blackboard().set("enemy_seen", seen);
                prefetching.at(b[i]).blackboard().set("enemy_seen", seen);
            }
        }
        if (frame % 4 == 1) {  // every 4th frame: a few despawned and respawned into the freed slots
            for (std::size_t i = static_cast<std::size_t>(frame); i < 300; i += 29) {
                if (!plain.alive(a[i])) continue;
                REQUIRE(plain.despawn(a[i]));
                REQUIRE(prefetching.despawn(b[i]));
            }
        }
        if (frame % 4 == 3) {
            for (std::size_t i = 0; i < 300; ++i) {
                if (plain.alive(a[i])) continue;
                a[i] = plain.spawn(guard, {.seed = i + 1000});
                b[i] = prefetching.spawn(guard, {.seed = i + 1000});
            }
        }
        const FrameMetrics m1 = plain.step(50ms);
        const FrameMetrics m2 = prefetching.step(50ms);
        CHECK(m1.agents_stepped == m2.agents_stepped);
        CHECK(plain.state_hash() == prefetching.state_hash());
    }
}
