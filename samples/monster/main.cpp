// ebt_monster: the monster of the seeds' FSM article (scenarios/monster_scenario.hpp) with either
// brain, the plain state machine or the ebt tree written with the FSM-to-tree patterns
// (docs/fsm_patterns.md). A player wanders; monsters patrol, follow it when they see it, attack it
// in reach, flee when hurt and come back. Prints a line per simulated second (monsters per state),
// or with one monster its state changes, and the final state hash: the same for both brains, in
// both modes, for the same seed.
//
//   ebt_monster [--seed N] [--seconds S] [--monsters N] [--brain fsm|tree] [--mode poll|event]
//               [--trace] [--tree FILE]
#include "monster_scenario.hpp"

#include <ebt/config.hpp>
#if EBT_HAS_XML
#include <ebt/xml.hpp>
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

using namespace ebt;
using namespace ebt::scenarios;

namespace {

void usage(std::FILE* out, const char* argv0) {
    std::fprintf(out,
                 "usage: %s [options]\n"
                 "The monster of the FSM article: it patrols, follows the player when it sees it, attacks in reach,\n"
                 "flees when hurt and comes back, decided by a plain state machine or by an ebt tree. Prints a line\n"
                 "per simulated second (one monster: its state changes) and the final state hash, the same for both\n"
                 "brains and both modes for the same seed.\n"
                 "\n"
                 "  --seed N         random seed of the world (default 1)\n"
                 "  --seconds S      simulated seconds at 20 Hz (default 60)\n"
                 "  --monsters N     monsters (default 100)\n"
                 "  --brain B        fsm | tree (default tree)\n"
                 "  --mode M         poll | event: how the tree's agents run (default event; tree brain only)\n"
                 "  --trace          print monster 0's state changes (always, with one monster)\n"
                 "  --tree FILE      the tree brain's tree from a BehaviorTree.CPP v4 XML file\n"
                 "                   (default: built in; samples/monster.xml is the same tree)\n"
                 "  -h, --help       this help\n",
                 argv0);
}

[[noreturn]] void fail(const char* argv0, const std::string& message) {
    std::fprintf(stderr, "%s: error: %s\n", argv0, message.c_str());
    std::exit(2);
}

long long parse_integer(const char* argv0, const char* option, const char* text, long long lo, long long hi) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
        fail(argv0, std::string(option) + " needs an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                        ", got '" + text + "'");
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    const char* argv0 = argc > 0 ? argv[0] : "ebt_monster";
    MonsterConfig config;
    config.monsters = 100;
    long long seconds = 60;
    std::string brain_name = "tree";
    Mode mode = Mode::Event;
    bool trace = false;
    std::string tree_file;

    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc) fail(argv0, arg + " needs a value");
            return argv[++i];
        };
        if (arg == "-h" || arg == "--help") {
            usage(stdout, argv0);
            return 0;
        } else if (arg == "--seed") {
            config.seed = static_cast<std::uint64_t>(parse_integer(argv0, "--seed", value(), 0, 1'000'000'000'000LL));
        } else if (arg == "--seconds") {
            seconds = parse_integer(argv0, "--seconds", value(), 1, 86'400);
        } else if (arg == "--monsters") {
            config.monsters = static_cast<int>(parse_integer(argv0, "--monsters", value(), 1, 1'000'000));
        } else if (arg == "--brain") {
            brain_name = value();
            if (brain_name != "fsm" && brain_name != "tree") fail(argv0, "--brain needs fsm or tree, got '" + brain_name + "'");
        } else if (arg == "--mode") {
            const std::string m = value();
            if (m == "poll") mode = Mode::Polling;
            else if (m == "event") mode = Mode::Event;
            else fail(argv0, "--mode needs poll or event, got '" + m + "'");
        } else if (arg == "--trace") {
            trace = true;
        } else if (arg == "--tree") {
            tree_file = value();
        } else {
            usage(stderr, argv0);
            fail(argv0, "unknown option '" + arg + "'");
        }
    }
    if (!tree_file.empty() && brain_name != "tree") fail(argv0, "--tree needs --brain tree");
    if (config.monsters == 1) trace = true;

    std::unique_ptr<MonsterBrain> brain;
    if (brain_name == "fsm") {
        brain = std::make_unique<FsmBrain>();
    } else {
        Registry registry;
        register_monster_actions(registry);
        if (tree_file.empty()) {
            brain = std::make_unique<TreeBrain>(monster_tree(registry), mode);
        } else {
#if EBT_HAS_XML
            try {
                brain = std::make_unique<TreeBrain>(xml::Loader(registry).load_file(tree_file), mode);
            } catch (const std::exception& e) {
                fail(argv0, std::string("--tree: ") + e.what());
            }
#else
            fail(argv0, "--tree: this build of ebt has no XML support (EBT_XML=OFF)");
#endif
        }
    }

    MonsterWorld world(config, *brain);
    const auto frames_per_second = static_cast<std::uint64_t>(config.hz);
    const std::uint64_t frames = static_cast<std::uint64_t>(seconds) * frames_per_second;
    std::printf("ebt %s monster: %d monster%s, %lld s at 20 Hz, seed %llu, %s brain%s\n", version_string(),
                config.monsters, config.monsters == 1 ? "" : "s", seconds, static_cast<unsigned long long>(config.seed),
                brain->name(), brain_name == "tree" ? (mode == Mode::Event ? ", event mode" : ", poll mode") : "");
    if (config.monsters > 1) std::printf("\n time s   patrol   follow   attack     flee   return   player hurt\n");

    std::uint64_t changes = 0;
    std::optional<MonsterState> traced;
    std::vector<MonsterState> before(world.outputs().size());
    for (std::uint64_t f = 1; f <= frames; ++f) {
        for (std::size_t i = 0; i < before.size(); ++i) before[i] = world.state(i);
        world.step();
        for (std::size_t i = 0; i < before.size(); ++i)
            if (f > 1 && world.state(i) != before[i]) ++changes;
        if (trace && (!traced || *traced != world.state(0))) {
            const MonsterInputs& in = world.inputs()[0];
            const std::string change = traced ? std::string(to_string(*traced)) + " -> " + to_string(world.state(0))
                                              : std::string("starts in ") + to_string(world.state(0));
            std::printf("%7.2f s  monster 0: %-17s health %5.1f, player %5.1f away, home %5.1f away\n",
                        static_cast<double>(f) / config.hz, change.c_str(), static_cast<double>(in.health),
                        static_cast<double>(in.player_dist), static_cast<double>(in.home_dist));
            traced = world.state(0);
        }
        if (config.monsters > 1 && f % frames_per_second == 0) {
            const std::vector<int> c = world.counts();
            std::printf("%7.1f %8d %8d %8d %8d %8d %13.1f\n", static_cast<double>(f) / config.hz, c[0], c[1], c[2], c[3],
                        c[4], world.player_damage());
        }
    }

    std::uint32_t entries[kMonsterStates] = {};
    for (const MonsterOutputs& out : world.outputs())
        for (int s = 0; s < kMonsterStates; ++s) entries[s] += out.entries[s];
    std::printf("\ndone: %llu frames, %llu state changes; states entered: patrol %u, follow %u, attack %u, flee %u, return %u\n",
                static_cast<unsigned long long>(frames), static_cast<unsigned long long>(changes), entries[0], entries[1],
                entries[2], entries[3], entries[4]);
    std::printf("state hash: %016llx\n", static_cast<unsigned long long>(world.hash()));
    return 0;
}
