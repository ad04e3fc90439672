// ebt_arena: the seeds' guard scenario as a small game world (scenarios/arena_scenario.hpp).
//
// Guards patrol their squad's route on a 2D arena, intruders slip in and wander; a guard that sees
// one attacks it (and raises its squad's alarm, which brings the rest of the squad running), flees
// when its health gets low, and goes back to patrolling when the enemy is dead. Intruders in a fight
// flash now and then (stunning the guards near them) and knock attackers back: passive requests
// that the guards' tree carries out before anything else. Runs headless and as
// fast as it can; prints one line per simulated second and a summary with the final state hash,
// which is the same in polling and event mode for the same seed.
//
//   ebt_arena [--agents N] [--seconds S] [--hz H] [--seed N] [--mode poll|event] [--lod on|off]
//             [--realtime] [--trace N] [--svg FILE] [--view N] [--dot FILE] [--threads N]
//             [--log FILE [--log-agents N,M,...]] [--record FILE] [--save-at S FILE] [--load FILE]
//             [--tree FILE [--watch]]
//             [--inspect PORT [--inspect-address ADDR] [--inspect-token TOKEN] [--inspect-read-only]]
#include "arena_scenario.hpp"

#include <ebt/debug/inspector.hpp>
#include <ebt/debug/trace_log.hpp>
#include <ebt/debug/views.hpp>
#if EBT_HAS_XML
#include <ebt/debug/record.hpp>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace ebt;
using scenarios::Arena;
using scenarios::ArenaConfig;

namespace {

void usage(std::FILE* out, const char* argv0) {
    std::fprintf(out,
                 "usage: %s [options]\n"
                 "The seeds' guard tree on a 2D arena: squads of guards patrol, intruders wander in, guards attack,\n"
                 "flee when hurt and answer their squad's alarm. Prints a line per simulated second and the final\n"
                 "state hash (the same in poll and event mode for the same seed).\n"
                 "\n"
                 "  --agents N       guards (default 10000)\n"
                 "  --seconds S      simulated seconds (default 60)\n"
                 "  --hz H           frames per simulated second (default 20)\n"
                 "  --seed N         random seed of the world (default 1)\n"
                 "  --mode M         poll | event: how the agents run their trees (default event)\n"
                 "  --lod on|off     AI level of detail: guards far from every intruder tick every 4th frame\n"
                 "                   (default off)\n"
                 "  --realtime       sleep to the frame rate instead of running as fast as possible\n"
                 "  --threads N      tick the guards on N threads (World::set_threads; default 1): the run and\n"
                 "                   its state hash are the same at every N\n"
                 "  --trace N        print guard N's lifecycle trace, one line per frame: frame node-label:event\n"
                 "                   (frames where it only updates its running action are left out)\n"
                 "  --svg FILE       write an SVG picture of the arena at the end\n"
                 "  --view N         print guard N's tree with its live state at the end (debug::agent_text)\n"
                 "  --dot FILE       write that guard's live tree as Graphviz DOT at the end (guard 0 without\n"
                 "                   --view; render it with: dot -Tpng FILE -o tree.png)\n"
                 "  --log FILE       write a trace log of the run (every event and blackboard change of the\n"
                 "                   guards) to FILE; read it with ebt_trace FILE\n"
                 "  --log-agents N,M only these guards in the log (default: all)\n"
                 "  --tree FILE      load the guards' tree from a BehaviorTree.CPP v4 XML file\n"
                 "                   (default: built in; samples/arena.xml is the same tree)\n"
                 "  --watch          with --tree: at every simulated second, reload the file if it changed\n"
                 "                   (World::reload; docs/hot_reload.md) and print what happened\n"
                 "  --record FILE    record the run for ebt_replay (docs/debugging.md, \"Record and replay\")\n"
                 "  --save-at S FILE save the whole run to FILE when the simulated clock reaches S seconds (at\n"
                 "                   that frame's end), then go on to the end\n"
                 "  --load FILE      continue the run saved in FILE up to --seconds: the arena (agents, hz, seed,\n"
                 "                   mode, lod, tree) comes from the file; giving one of those options with\n"
                 "                   another value is refused. --threads may be any count\n"
                 "                   (docs/snapshots.md, \"In the arena\")\n"
                 "  --inspect PORT   serve the live inspector on http://127.0.0.1:PORT/ (0: a free port) and run\n"
                 "                   in real time until Ctrl-C (or --seconds, when given)\n"
                 "  --inspect-address ADDR  bind the inspector to ADDR instead of 127.0.0.1 (e.g. 0.0.0.0)\n"
                 "                   any address but loopback needs --inspect-token\n"
                 "  --inspect-token TOKEN   every request must carry TOKEN (the printed URL has it)\n"
                 "  --inspect-read-only     the inspector refuses every command (pause, step, write, abort)\n"
                 "  -h, --help       this help\n",
                 argv0);
}

[[noreturn]] void fail(const char* argv0, const std::string& message) {
    std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for the options)\n", argv0, message.c_str(), argv0);
    std::exit(2);
}

long long parse_int(const char* argv0, const char* option, const char* text, long long lo, long long hi) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        fail(argv0, std::string(option) + " needs a whole number from " + std::to_string(lo) + " to " +
                        std::to_string(hi) + ", got '" + text + "'");
    return v;
}

double parse_real(const char* argv0, const char* option, const char* text, double lo, double hi) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi)) {
        char range[96];
        std::snprintf(range, sizeof range, " needs a number from %g to %g, got '", lo, hi);
        fail(argv0, std::string(option) + range + text + "'");
    }
    return v;
}

/// Prints one guard's lifecycle events, one line per frame ("frame 12  Patrol:T(Aborted) ...").
struct FrameTrace : TraceListener {
    const Tree* tree = nullptr;
    int guard = -1;
    std::uint64_t frame = 0;
    std::string line;
    bool interesting = false;  // the frame has more than a running action's update

    std::string name(NodeIndex n) const {
        if (tree->kind(n) == NodeKind::Action) return tree->label(n);
        std::string s = to_string(tree->kind(n));
        s += '#';
        s += std::to_string(n);
        return s;
    }
    void on_event(const TraceEvent& e) override {
        if (!e.is_lifecycle()) return;
        if (e.tick != frame) flush();
        frame = e.tick;
        line += ' ';
        line += name(e.node);
        switch (e.kind) {
        case TraceKind::Initialize: line += ":I"; interesting = true; break;
        case TraceKind::Update:
            line += ":U";
            if (e.status != Status::Running) {
                line += '(';
                line += to_string(e.status);
                line += ')';
                interesting = true;
            }
            break;
        default:
            line += ":T(";
            line += to_string(e.status);
            line += ')';
            interesting = true;
            break;
        }
    }
    void flush() {
        if (interesting) std::printf("  trace guard %d  frame %5llu:%s\n", guard, static_cast<unsigned long long>(frame), line.c_str());
        line.clear();
        interesting = false;
    }
};

volatile std::sig_atomic_t g_interrupted = 0;  // Ctrl-C while inspecting: finish the run
extern "C" void on_interrupt(int) { g_interrupted = 1; }

std::string number_text(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

double ms(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) * 1e-6; }

/// Median and maximum of a small sample (sorts it).
std::pair<double, double> median_max(std::vector<double>& v) {
    if (v.empty()) return {0, 0};
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.back()};
}

}  // namespace

int main(int argc, char** argv) {
    const char* argv0 = argv[0];
    ArenaConfig config;
    double sim_seconds = 60;
    bool realtime = false;
    long long trace_guard = -1;
    std::string svg;
    std::string record;
    long long view_guard = -1;
    std::string dot;
    std::string log_file;
    std::vector<long long> log_guards;
    long long inspect_port = -1;
    std::string inspect_address;  // "" : the inspector's default, 127.0.0.1
    std::string inspect_token;
    bool inspect_address_given = false, inspect_token_given = false, inspect_read_only = false;
    bool seconds_given = false;
    bool watch = false;  // --watch: reload --tree's file when it changes
    // --load takes the arena from its file: these say which of its options the command line gave.
    bool agents_given = false, hz_given = false, seed_given = false, mode_given = false, lod_given = false;
    double save_at = -1;  // --save-at seconds; < 0: no save
    std::string save_file, load_file;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc) fail(argv0, "option " + opt + " needs a value");
            return argv[++i];
        };
        if (opt == "-h" || opt == "--help") {
            usage(stdout, argv0);
            return 0;
        } else if (opt == "--agents") {
            config.agents = static_cast<int>(parse_int(argv0, "--agents", value(), 1, 5'000'000));
            agents_given = true;
        } else if (opt == "--seconds") {
            sim_seconds = parse_real(argv0, "--seconds", value(), 0.001, 1e6);
            seconds_given = true;
        } else if (opt == "--hz") {
            config.hz = parse_real(argv0, "--hz", value(), 0.1, 10'000);
            hz_given = true;
        } else if (opt == "--threads") {
            config.threads = static_cast<std::uint32_t>(parse_int(argv0, "--threads", value(), 1, 256));
        } else if (opt == "--seed") {
            config.seed = static_cast<std::uint64_t>(parse_int(argv0, "--seed", value(), 0, 9'000'000'000'000'000'000LL));
            seed_given = true;
        } else if (opt == "--mode") {
            const std::string m = value();
            if (m == "poll" || m == "polling") config.mode = Mode::Polling;
            else if (m == "event") config.mode = Mode::Event;
            else fail(argv0, "--mode must be 'poll' or 'event', got '" + m + "'");
            mode_given = true;
        } else if (opt == "--lod") {
            const std::string m = value();
            if (m == "on") config.lod = true;
            else if (m == "off") config.lod = false;
            else fail(argv0, "--lod must be 'on' or 'off', got '" + m + "'");
            lod_given = true;
        } else if (opt == "--realtime") {
            realtime = true;
        } else if (opt == "--trace") {
            trace_guard = parse_int(argv0, "--trace", value(), 0, 5'000'000);
        } else if (opt == "--tree") {
            config.tree_file = value();
            if (config.tree_file.empty()) fail(argv0, "--tree needs a file name");
#if !EBT_HAS_XML
            fail(argv0, "--tree: this build of ebt has no XML support (configured with -DEBT_XML=OFF)");
#endif
        } else if (opt == "--watch") {
            watch = true;
        } else if (opt == "--record") {
            record = value();
            if (record.empty()) fail(argv0, "--record needs a file name");
#if !EBT_HAS_XML
            fail(argv0, "--record: this build of ebt has no XML support (configured with -DEBT_XML=OFF)");
#endif
        } else if (opt == "--save-at") {
            save_at = parse_real(argv0, "--save-at", value(), 0, 1e6);
            save_file = value();
            if (save_file.empty()) fail(argv0, "--save-at needs a file name after the seconds");
        } else if (opt == "--load") {
            load_file = value();
            if (load_file.empty()) fail(argv0, "--load needs a file name");
        } else if (opt == "--inspect") {
            inspect_port = parse_int(argv0, "--inspect", value(), 0, 65535);
        } else if (opt == "--inspect-address") {
            inspect_address = value();
            inspect_address_given = true;
            if (inspect_address.empty()) fail(argv0, "--inspect-address needs an address, e.g. 0.0.0.0");
        } else if (opt == "--inspect-token") {
            inspect_token = value();
            inspect_token_given = true;
            const bool visible = std::all_of(inspect_token.begin(), inspect_token.end(), [](char c) { return c > ' ' && c < 127; });
            if (inspect_token.empty() || inspect_token.size() > 256 || !visible)
                fail(argv0, "--inspect-token needs 1 to 256 visible ASCII characters (no spaces)");
        } else if (opt == "--inspect-read-only") {
            inspect_read_only = true;
        } else if (opt == "--svg") {
            svg = value();
            if (svg.empty()) fail(argv0, "--svg needs a file name");
        } else if (opt == "--view") {
            view_guard = parse_int(argv0, "--view", value(), 0, 5'000'000);
        } else if (opt == "--dot") {
            dot = value();
            if (dot.empty()) fail(argv0, "--dot needs a file name");
        } else if (opt == "--log") {
            log_file = value();
            if (log_file.empty()) fail(argv0, "--log needs a file name");
        } else if (opt == "--log-agents") {
            const std::string list = value();
            std::size_t from = 0;
            while (true) {
                const std::size_t comma = list.find(',', from);
                const std::string item = list.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
                log_guards.push_back(parse_int(argv0, "--log-agents", item.c_str(), 0, 5'000'000));
                if (comma == std::string::npos) break;
                from = comma + 1;
            }
        } else {
            fail(argv0, "unknown option '" + opt + "'");
        }
    }
    if (inspect_port < 0) {
        if (inspect_address_given) fail(argv0, "--inspect-address needs --inspect PORT");
        if (inspect_token_given) fail(argv0, "--inspect-token needs --inspect PORT");
        if (inspect_read_only) fail(argv0, "--inspect-read-only needs --inspect PORT");
    }
    if (inspect_address_given && !debug::is_loopback_address(inspect_address) && !inspect_token_given)
        fail(argv0, "--inspect-address " + inspect_address +
                        " is not a loopback address: it needs --inspect-token TOKEN (without one, anyone who can "
                        "reach it could pause the world and write blackboards)");
    // --load: the arena comes from the file; an option that says otherwise is refused.
    std::optional<scenarios::ArenaSave> loaded;
    if (!load_file.empty()) {
        try {
            loaded = scenarios::ArenaSave::read_file(load_file);
        } catch (const std::exception& e) {  // debug::FileFormatError: the file, the byte and the problem
            std::fprintf(stderr, "%s: error: --load: %s\n", argv0, e.what());
            return 2;
        }
        const ArenaConfig& saved = loaded->config();
        const auto conflict = [&](bool given, bool differs, const std::string& option, const std::string& ours,
                                  const std::string& theirs) {
            if (given && differs)
                fail(argv0, option + " " + ours + " conflicts with --load " + load_file + ", saved with " + option + " " +
                                theirs + " (the loaded arena's configuration comes from its file: leave " + option +
                                " out)");
        };
        const auto mode_name = [](Mode m) { return std::string(m == Mode::Polling ? "poll" : "event"); };
        conflict(agents_given, config.agents != saved.agents, "--agents", std::to_string(config.agents), std::to_string(saved.agents));
        conflict(hz_given, config.hz != saved.hz, "--hz", number_text(config.hz), number_text(saved.hz));
        conflict(seed_given, config.seed != saved.seed, "--seed", std::to_string(config.seed), std::to_string(saved.seed));
        conflict(mode_given, config.mode != saved.mode, "--mode", mode_name(config.mode), mode_name(saved.mode));
        conflict(lod_given, config.lod != saved.lod, "--lod", config.lod ? "on" : "off", saved.lod ? "on" : "off");
        conflict(!config.tree_file.empty(), config.tree_file != saved.tree_file, "--tree", config.tree_file,
                 saved.tree_file.empty() ? "(the built-in tree)" : saved.tree_file);
        if (!record.empty())
            fail(argv0, "--record cannot be combined with --load: a recording starts from a new world");
        const std::uint32_t threads = config.threads;
        config = saved;
        config.threads = threads;
        const double saved_seconds = static_cast<double>(loaded->time()) * 1e-6;
        if (seconds_given && sim_seconds <= saved_seconds)
            fail(argv0, "--seconds " + number_text(sim_seconds) + ": the run in " + load_file + " is at " +
                            number_text(saved_seconds) + " s already");
        if (!seconds_given && inspect_port < 0 && sim_seconds <= saved_seconds)
            fail(argv0, "the run in " + load_file + " is at " + number_text(saved_seconds) +
                            " s, past the default 60 s: give --seconds");
        if (save_at >= 0 && save_at <= saved_seconds)
            fail(argv0, "--save-at " + number_text(save_at) + ": the run in " + load_file + " is at " +
                            number_text(saved_seconds) + " s already");
    }
    if (save_at > sim_seconds && !(inspect_port >= 0 && !seconds_given))
        fail(argv0, "--save-at " + number_text(save_at) + " is after the end of the run (--seconds " +
                        number_text(sim_seconds) + ")");
    if (trace_guard >= config.agents)
        fail(argv0, "--trace " + std::to_string(trace_guard) + ": there are only " + std::to_string(config.agents) +
                        " guards (0 to " + std::to_string(config.agents - 1) + ")");

    if (view_guard >= config.agents)
        fail(argv0, "--view " + std::to_string(view_guard) + ": there are only " + std::to_string(config.agents) +
                        " guards (0 to " + std::to_string(config.agents - 1) + ")");
    if (!dot.empty()) {  // fail now rather than after the run
        std::FILE* probe = std::fopen(dot.c_str(), "w");
        if (!probe) fail(argv0, "--dot: cannot write '" + dot + "': " + std::strerror(errno));
        std::fclose(probe);
    }
    if (!log_guards.empty() && log_file.empty()) fail(argv0, "--log-agents needs --log FILE");
    if (watch && config.tree_file.empty()) fail(argv0, "--watch needs --tree FILE (the file to watch)");
    if (watch && !record.empty()) fail(argv0, "--watch cannot be combined with --record: a recording cannot hold a reload");
    for (const long long g : log_guards)
        if (g >= config.agents)
            fail(argv0, "--log-agents " + std::to_string(g) + ": there are only " + std::to_string(config.agents) +
                            " guards (0 to " + std::to_string(config.agents - 1) + ")");

    if (!save_file.empty()) {  // fail now rather than in the middle of the run
        std::FILE* probe = std::fopen(save_file.c_str(), "ab");
        if (!probe) fail(argv0, "--save-at: cannot write '" + save_file + "': " + std::strerror(errno));
        std::fclose(probe);
    }
    if (!svg.empty()) {  // fail now rather than after the run
        std::FILE* probe = std::fopen(svg.c_str(), "w");
        if (!probe) fail(argv0, "--svg: cannot write '" + svg + "': " + std::strerror(errno));
        std::fclose(probe);
    }

    FrameTrace tracer;
    if (trace_guard >= 0) {
        config.listener = &tracer;
        config.listener_agent = static_cast<int>(trace_guard);
        tracer.guard = static_cast<int>(trace_guard);
    }

    const auto setup_start = std::chrono::steady_clock::now();
    std::optional<Arena> holder;
#if EBT_HAS_XML
    // Declared after the arena, so that it stops (detaching from the world) before the world goes.
    std::optional<debug::Recorder> recorder;
    if (!record.empty()) {
        config.instrument = [&](const Registry& actions, World& world) -> const Registry* {
            recorder.emplace(actions);
            recorder->start(world, record);
            return &recorder->registry();
        };
    }
#endif
    try {
        if (loaded) holder.emplace(*loaded, config);
        else holder.emplace(config);
    } catch (const std::exception& e) {  // e.g. a --tree file that does not load: file:line:column and the problem
        std::fprintf(stderr, "%s: error: %s%s\n", argv0, loaded ? "--load: " : "", e.what());
        return 2;
    }
    Arena& arena = *holder;
    tracer.tree = &arena.tree();
    std::optional<debug::TraceLogWriter> log;
    if (!log_file.empty()) {
        debug::TraceLogOptions options;
        for (const long long g : log_guards) options.agents.push_back(arena.handle(static_cast<int>(g)));
        try {
            log.emplace(log_file, options);
        } catch (const std::exception& e) {
            fail(argv0, std::string("--log: ") + e.what());
        }
        log->attach(arena.world());
    }
    const double setup_ms = ms(std::chrono::steady_clock::now() - setup_start);

    // The live inspector: real time, and no end unless --seconds was given.
    std::optional<debug::Inspector> inspector;
    if (inspect_port >= 0) {
        try {
            debug::InspectorOptions options;
            options.port = static_cast<std::uint16_t>(inspect_port);
            if (inspect_address_given) options.address = inspect_address;
            options.token = inspect_token;
            options.read_only = inspect_read_only;
            inspector.emplace(arena.world(), options);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: error: --inspect: %s\n", argv0, e.what());
            return 2;
        }
        realtime = true;
        if (!seconds_given) sim_seconds = 1e6;
        std::signal(SIGINT, on_interrupt);
        std::signal(SIGTERM, on_interrupt);
    }

    const std::uint64_t frame_us = static_cast<std::uint64_t>(std::max<long long>(1, std::llround(1e6 / config.hz)));
    const auto frames = static_cast<std::uint64_t>(std::max<long long>(1, std::llround(sim_seconds * 1e6 / static_cast<double>(frame_us))));

    char length[64];  // "60 s at 20 Hz (1200 frames)", or "until stopped at 20 Hz" when inspecting without --seconds
    if (inspector && !seconds_given) std::snprintf(length, sizeof length, "until stopped at %g Hz", config.hz);
    else
        std::snprintf(length, sizeof length, "%.6g s at %g Hz (%llu frames)", sim_seconds, config.hz,
                      static_cast<unsigned long long>(frames));
    std::printf("ebt %s arena: %d guards in %d squads, %d intruders, %s, seed %llu, "
                "%s mode, LOD %s%s%s\n",
                version_string(), config.agents, arena.squads(), arena.intruders(), length,
                static_cast<unsigned long long>(config.seed),
                config.mode == Mode::Polling ? "poll" : "event", config.lod ? "on" : "off",
                config.threads > 1 ? (", " + std::to_string(config.threads) + " threads").c_str() : "",
                realtime ? ", real time" : "");
    if (loaded)
        std::printf("continuing the run saved in %s at %g s (frame %llu); restored in %.1f ms\n", load_file.c_str(),
                    static_cast<double>(loaded->time()) * 1e-6, static_cast<unsigned long long>(loaded->frame()), setup_ms);
    else
        std::printf("arena %.0f x %.0f units; world set up in %.1f ms\n", arena.width(), arena.height(), setup_ms);
    if (inspector)
        std::printf("inspector: %s  (%sCtrl-C to stop%s)\n", inspector->url().c_str(),
                    inspect_read_only ? "read-only, " : "", seconds_given ? ", or at the end of --seconds" : "");
    std::printf("\n");
    std::printf("%7s %8s %8s %8s %8s %8s %8s %10s %7s %11s %8s %8s %8s\n", "time s", "patrol", "respond", "attack",
                "flee", "stunned", "knocked", "intruders", "alarms", "events", "AI ms", "AI ms", "sim ms");
    std::printf("%7s %8s %8s %8s %8s %8s %8s %10s %7s %11s %8s %8s %8s\n", "", "", "", "", "", "", "back", "", "",
                "handled", "median", "worst", "median");
    std::fflush(stdout);

    std::vector<double> ai_ms, sim_ms, all_ai_ms;
    all_ai_ms.reserve(std::min<std::uint64_t>(frames, 1'000'000));
    std::uint64_t second_events = 0, total_events = 0, total_guards = 0, total_updates = 0;
    double total_ai = 0, total_sim = 0;
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t ticks = 0;  // real-time frame slots passed (paused ones included)
    // --save-at: at the end of the first frame whose clock reaches the time (or now, for 0).
    const auto save_at_us = static_cast<TimePoint>(std::llround(save_at * 1e6));
    bool saved = save_at < 0;
    const auto save_when_due = [&]() -> bool {
        if (saved || arena.now() < save_at_us) return true;
        saved = true;
        try {
            arena.save_file(save_file);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: error: --save-at: %s\n", argv0, e.what());
            return false;
        }
        std::printf("saved at %g s (frame %llu) to %s\n", static_cast<double>(arena.now()) * 1e-6,
                    static_cast<unsigned long long>(arena.frame()), save_file.c_str());
        std::fflush(stdout);
        return true;
    };
    if (!save_when_due()) return 1;
    // --watch: the file's modification time and size, looked at once per simulated second.
    const auto file_stamp = [&] {
        std::error_code error;
        const auto time = std::filesystem::last_write_time(config.tree_file, error);
        const auto size = std::filesystem::file_size(config.tree_file, error);
        return std::pair(error ? std::filesystem::file_time_type{} : time, error ? std::uintmax_t{0} : size);
    };
    auto watched = watch ? file_stamp() : std::pair<std::filesystem::file_time_type, std::uintmax_t>{};
    const auto reload_if_changed = [&] {
        const auto now = file_stamp();
        if (now == watched) return;
        watched = now;
        const auto at = static_cast<unsigned long long>(arena.frame());
        try {
            const ReloadReport report = arena.reload_tree_file(config.tree_file);
            std::string what = std::to_string(report.agents_restarted) + " guards restarted";
            if (report.agents_updated > 0)
                what += ", " + std::to_string(report.agents_updated) + " kept running (parameter values only)";
            for (const ReloadChange& change : report.changes)
                for (const DroppedKey& key : change.dropped) what += "; key " + key.name + " dropped (" + key.reason + ")";
            std::printf("reloaded %s at frame %llu: %s\n", config.tree_file.c_str(), at, what.c_str());
        } catch (const std::exception& e) {
            std::printf("reload of %s at frame %llu failed, the old tree is kept: %s\n", config.tree_file.c_str(), at, e.what());
        }
        std::fflush(stdout);
    };
    const std::uint64_t first_frame = arena.frame();  // 0, or the frame a --load run continues from
    std::uint64_t f = first_frame;
    for (; f < frames && !g_interrupted; ++f) {
        if (inspector) {
            // Paused: keep serving at the frame rate without stepping.
            while (!inspector->before_frame() && !g_interrupted)
                std::this_thread::sleep_until(start + std::chrono::microseconds(++ticks * frame_us));
            if (g_interrupted) break;
        }
        const scenarios::ArenaFrame fr = arena.step();
        if (inspector) inspector->after_frame(fr.ai);
        tracer.flush();
        const double a = ms(fr.ai.wall_time), s = ms(fr.sim_time);
        ai_ms.push_back(a);
        sim_ms.push_back(s);
        all_ai_ms.push_back(a);
        total_ai += a;
        total_sim += s;
        second_events += fr.ai.events_handled;
        total_events += fr.ai.events_handled;
        total_guards += fr.ai.guards_evaluated;
        total_updates += fr.ai.behaviors_updated;
        // A line whenever a simulated second completes (and after the last frame).
        const std::uint64_t t_before = f * frame_us, t_after = (f + 1) * frame_us;
        if (t_after / 1'000'000 != t_before / 1'000'000 || f + 1 == frames) {
            const scenarios::ArenaCounts c = arena.counts();
            const auto [ai_med, ai_max] = median_max(ai_ms);
            const auto [sim_med, sim_max] = median_max(sim_ms);
            (void)sim_max;
            std::printf("%7.1f %8d %8d %8d %8d %8d %8d %10d %7d %11llu %8.3f %8.3f %8.3f\n",
                        static_cast<double>(t_after) * 1e-6, c.patrol, c.respond, c.attack, c.flee, c.stunned,
                        c.knocked_back, c.intruders_active, c.squads_alarmed,
                        static_cast<unsigned long long>(second_events), ai_med, ai_max, sim_med);
            std::fflush(stdout);
            ai_ms.clear();
            sim_ms.clear();
            second_events = 0;
            if (watch && f + 1 != frames) reload_if_changed();
        }
        if (!save_when_due()) return 1;
        if (realtime) std::this_thread::sleep_until(start + std::chrono::microseconds(++ticks * frame_us));
    }
    const std::uint64_t frames_run = f - first_frame;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const scenarios::ArenaCounts c = arena.counts();
    const scenarios::ArenaTotals& t = arena.totals();
    const auto [ai_med, ai_max] = median_max(all_ai_ms);
    const double simulated = static_cast<double>(frames_run * frame_us) * 1e-6;
    std::printf("\ndone: %llu frames, %.1f simulated s in %.2f wall s (%.1fx real time)\n",
                static_cast<unsigned long long>(frames_run), simulated, wall, wall > 0 ? simulated / wall : 0.0);
    std::printf("  AI (World::step):  %.2f s in all; per frame median %.3f ms, worst %.3f ms\n", total_ai * 1e-3,
                ai_med, ai_max);
    std::printf("                     %llu events handled, %llu guard evaluations, %llu leaf updates\n",
                static_cast<unsigned long long>(total_events), static_cast<unsigned long long>(total_guards),
                static_cast<unsigned long long>(total_updates));
    std::printf("  simulation:        %.2f s in all (intruders, perception grid, alarms, LOD)\n", total_sim * 1e-3);
    std::printf("  guards now:        %d patrol, %d respond, %d attack, %d flee, %d stunned, %d knocked back\n", c.patrol,
                c.respond, c.attack, c.flee, c.stunned, c.knocked_back);
    std::printf("  since the start:   %llu attacks, %llu flights, %llu squad alarms, %llu intruders killed,\n"
                "                     %llu stuns, %llu knockbacks\n",
                static_cast<unsigned long long>(t.attacks), static_cast<unsigned long long>(t.flights),
                static_cast<unsigned long long>(t.alarms_raised), static_cast<unsigned long long>(t.intruders_killed),
                static_cast<unsigned long long>(t.stuns), static_cast<unsigned long long>(t.knockbacks));
    std::printf("  state hash:        %016llx  (world %016llx, sim %016llx)\n",
                static_cast<unsigned long long>(arena.hash()),
                static_cast<unsigned long long>(arena.world().state_hash()),
                static_cast<unsigned long long>(arena.sim_hash()));
    if (log) {
        try {
            log->close();
            std::printf("  trace log:         %s (%llu records, %llu bytes; read it with ebt_trace)\n", log_file.c_str(),
                        static_cast<unsigned long long>(log->records()), static_cast<unsigned long long>(log->bytes_written()));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: error: %s\n", argv0, e.what());
            return 1;
        }
    }
#if EBT_HAS_XML
    if (recorder) {
        try {
            recorder->stop();
            std::printf("  recording:         %s (%llu frames; replay with ebt_replay)\n", record.c_str(),
                        static_cast<unsigned long long>(recorder->frames()));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: error: %s\n", argv0, e.what());
            return 1;
        }
    }
#endif
    if (!svg.empty()) {
        try {
            arena.write_svg(svg);
            std::printf("  picture:           %s\n", svg.c_str());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: error: %s\n", argv0, e.what());
            return 1;
        }
    }
    if (view_guard >= 0 || !dot.empty()) {
        const int guard = static_cast<int>(std::max(view_guard, 0LL));
        const Agent& agent = arena.world().at(arena.handle(guard));
        if (view_guard >= 0) std::printf("\nguard %d:\n%s", guard, debug::agent_text(agent).c_str());
        if (!dot.empty()) {
            std::FILE* out = std::fopen(dot.c_str(), "w");
            const std::string graph = debug::agent_dot(agent);
            if (!out || std::fwrite(graph.data(), 1, graph.size(), out) != graph.size() || std::fclose(out) != 0) {
                std::fprintf(stderr, "%s: error: --dot: cannot write '%s'\n", argv0, dot.c_str());
                return 1;
            }
            std::printf("  guard %d's tree:   %s\n", guard, dot.c_str());
        }
    }
    return 0;
}
