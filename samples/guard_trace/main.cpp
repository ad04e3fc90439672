// ebt_guard_trace: the seeds' guard tree on a scripted run, printed frame by frame.
//
// One guard agent per mode (polling and event-driven) runs the same script of world changes; the
// program prints each frame's lifecycle trace (identical in both modes, checked) and how many guards
// each mode evaluated. At the end it compares the two agents' live tree views (debug::agent_text).
// Exit code 0 when the traces and the views match, 1 otherwise.
//
//   ebt_guard_trace [--frames N] [--all] [--dot FILE]
//     --frames N  how many frames to run (default 16)
//     --all       also print guard and condition evaluations of the event-mode agent
//     --dot FILE  write the guard's live tree at the end as Graphviz DOT (debug::agent_dot)
#include "guard_scenario.hpp"

#include <ebt/debug/views.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// Collects one frame's events as readable text ("Patrol:I Patrol:U").
struct FramePrinter : TraceListener {
    const Tree* tree = nullptr;
    bool with_guards = false;
    std::vector<std::string> lifecycle;  // this frame
    std::vector<std::string> guards;     // this frame
    std::uint64_t guard_count = 0;

    std::string name(NodeIndex n) const {
        if (tree->kind(n) == NodeKind::Action) return tree->label(n);
        return std::string(to_string(tree->kind(n))) + "#" + std::to_string(n);
    }
    void on_event(const TraceEvent& e) override {
        switch (e.kind) {
        case TraceKind::Initialize: lifecycle.push_back(name(e.node) + ":I"); break;
        case TraceKind::Update: lifecycle.push_back(name(e.node) + ":U"); break;
        case TraceKind::Terminate: lifecycle.push_back(name(e.node) + ":T(" + to_string(e.status) + ")"); break;
        case TraceKind::GuardEvaluated:
        case TraceKind::ConditionEvaluated:
            ++guard_count;
            guards.push_back("guard " + name(e.node) + "=" + (e.result ? "true" : "false"));
            break;
        case TraceKind::Error: lifecycle.push_back(name(e.node) + ":Error(" + std::string(e.message) + ")"); break;
        }
    }
    std::string take() {
        std::string s;
        for (auto& x : lifecycle) s += (s.empty() ? "" : " ") + x;
        lifecycle.clear();
        return s;
    }
    std::string take_guards() {
        std::string s;
        for (auto& x : guards) s += (s.empty() ? "" : ", ") + x;
        guards.clear();
        return s;
    }
};

struct Change {
    int frame;
    const char* key;
    bool value;
};

void usage(const char* argv0) {
    std::printf("usage: %s [--frames N] [--all] [--dot FILE]\n"
                "  --frames N  frames to run (default 16, at 20 Hz)\n"
                "  --all       also print the event-mode agent's guard evaluations\n"
                "  --dot FILE  write the guard's live tree at the end as Graphviz DOT (render: dot -Tpng FILE)\n",
                argv0);
}

}  // namespace

int main(int argc, char** argv) {
    int frames = 16;
    bool all = false;
    const char* dot = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) {
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 100000) {
                std::fprintf(stderr, "error: --frames needs a number from 1 to 100000, got '%s'\n", argv[i]);
                return 2;
            }
            frames = static_cast<int>(v);
        } else if (!std::strcmp(argv[i], "--all")) {
            all = true;
        } else if (!std::strcmp(argv[i], "--dot")) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                std::fprintf(stderr, "error: --dot needs a file name\n");
                return 2;
            }
            dot = argv[++i];
        } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            usage(argv[0]);
            return 0;
        } else {
            std::fprintf(stderr, "error: unknown option '%s'\n", argv[i]);
            usage(argv[0]);
            return 2;
        }
    }

    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);

    FramePrinter poll_out, event_out;
    poll_out.tree = event_out.tree = &tree;
    Agent poll(tree, {.mode = Mode::Polling, .listener = &poll_out});
    Agent event(tree, {.mode = Mode::Event, .listener = &event_out});

    const Change script[] = {
        {3, scenarios::kEnemySeen, true},   // an intruder appears
        {6, scenarios::kHealthLow, true},   // the fight goes badly
        {9, scenarios::kHealthLow, false},  // healed while fleeing
        {12, scenarios::kEnemyDead, true},  // the intruder is dead
    };

    std::printf("ebt %s: the seeds' guard tree, %d frames at 20 Hz, polling and event mode side by side\n\n",
                version_string(), frames);
    std::printf("%s\n", tree.describe().c_str());
    std::printf("%-5s %-18s %-68s %s\n", "frame", "world change", "trace (identical in both modes)",
                "guards evaluated poll/event");

    bool same = true;
    for (int frame = 0; frame < frames; ++frame) {
        std::string change = "-";
        for (const Change& c : script)
            if (c.frame == frame) {
                poll.blackboard().set(c.key, c.value);
                event.blackboard().set(c.key, c.value);
                change = std::string(c.key) + "=" + (c.value ? "true" : "false");
            }
        const auto poll_guards = poll_out.guard_count, event_guards = event_out.guard_count;
        poll.tick(50ms);
        event.tick(50ms);
        const std::string p = poll_out.take(), e = event_out.take();
        poll_out.take_guards();
        const std::string eg = event_out.take_guards();
        std::printf("%5d %-18s %-68s %llu/%llu\n", frame, change.c_str(), e.c_str(),
                    static_cast<unsigned long long>(poll_out.guard_count - poll_guards),
                    static_cast<unsigned long long>(event_out.guard_count - event_guards));
        if (all && !eg.empty()) std::printf("%5s %-18s   (%s)\n", "", "", eg.c_str());
        if (p != e) {
            same = false;
            std::printf("      MISMATCH: polling trace was: %s\n", p.c_str());
        }
    }
    std::printf("\n%s after %d frames: guards evaluated %u (polling) vs %u (event); leaf updates %u vs %u\n",
                same ? "traces identical" : "TRACES DIFFER", frames, poll.stats().guards_evaluated,
                event.stats().guards_evaluated, poll.stats().updates, event.stats().updates);
    // Both agents are at the same tick: their live views must be the same text.
    const std::string view = debug::agent_text(event);
    if (view != debug::agent_text(poll)) {
        same = false;
        std::printf("LIVE VIEWS DIFFER: polling\n%s\nevent\n%s", debug::agent_text(poll).c_str(), view.c_str());
    }
    if (dot) {
        std::FILE* out = std::fopen(dot, "w");
        const std::string graph = debug::agent_dot(event);
        if (!out || std::fwrite(graph.data(), 1, graph.size(), out) != graph.size() || std::fclose(out) != 0) {
            std::fprintf(stderr, "error: --dot: cannot write '%s'\n", dot);
            return 2;
        }
        std::printf("the guard's live tree: %s\n", dot);
    }
    return same ? 0 : 1;
}
