// Wall time of a completed latent move through a World, split into the frame's two calls: the resumes
// (World::resume_all) and the step that ticks the woken agents (World::step). Not a Google Benchmark
// program: it times each call of each frame and sums them, which a benchmark loop cannot split
// (docs/benchmarks.md, "A move through a World, fifth pass"). Build it as the callgrind drivers are
// built (scripts/callgrind_driver.sh, ebt_build_callgrind_driver).
//
//   moves_timing spread|phase|split [AGENTS [FRAMES [event|polling]]]
//
// AGENTS (10,000) guard-tree agents whose Patrol is a latent move; each frame resumes the moves that
// end in it (one World::resume_all), then steps the World. `spread`: a move lasts 30..50 frames, drawn
// from the agent's seed and the number of requests so far, as the sweep's MovementSystem draws it, so
// that the agents that end a move and those that restart their root are mixed in slot order in every
// frame (the sweep's guard_b). `phase`: every move lasts 40 frames, so all agents end their moves in
// one frame and restart in the next (the same work, in runs of the same kind of tick). `split` (h-step):
// as spread, the agents' moves ending at random in slot order, but the first half of the slots ends
// its moves in odd frames and restarts in even ones, the second half the other way round (every move
// lasts an odd number of frames, 31..49; the second half's first one an even number): each frame
// meets its two kinds of tick in two runs (one half's restarts, then the other half's ends, or the
// other way round), at the same random places in memory as spread's, so that what spread costs more
// than split is the mix of the kinds (its branches), and what split costs more than phase is the
// memory order. 200 warm-up
// frames, then FRAMES (4,000) measured ones. Prints per completed move the nanoseconds of the resumes
// and of the step, and per agent-frame the two together, and the world's state hash.
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr ebt::Duration kFrame = std::chrono::milliseconds(50);

/// The game side: the handles of the moves that end in each frame of a 64-frame window.
struct Moves {
    ebt::World* world = nullptr;
    bool spread = true;
    bool split = false;
    std::size_t agents = 0;
    std::vector<bool> started;  // split: the agents (by seed) whose first move was requested
    std::uint64_t requests = 0;
    std::array<std::vector<ebt::ResumeHandle>, 64> due;

    void request(std::uint64_t seed, const ebt::ResumeHandle& handle) {
        ++requests;
        std::uint64_t length = spread ? 30 + (seed * 2654435761u + requests * 40503u) % 21 : 40;
        if (split) {
            length = 31 + 2 * ((seed * 2654435761u + requests * 40503u) % 10);
            if (!started[seed] && seed >= agents / 2) ++length;
            started[seed] = true;
        }
        due[(world->frame() + length) % due.size()].push_back(handle);
    }
};

double ns(Clock::duration d) { return std::chrono::duration<double, std::nano>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "spread") != 0 && std::strcmp(argv[1], "phase") != 0 &&
                     std::strcmp(argv[1], "split") != 0)) {
        std::fprintf(stderr, "usage: %s spread|phase|split [AGENTS [FRAMES [event|polling]]]\n", argv[0]);
        return 2;
    }
    const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000;
    const int frames = argc > 3 ? std::atoi(argv[3]) : 4'000;
    const ebt::Mode mode = argc > 4 && std::strcmp(argv[4], "polling") == 0 ? ebt::Mode::Polling : ebt::Mode::Event;

    ebt::World world;
    Moves moves{.world = &world,
                .spread = std::strcmp(argv[1], "spread") == 0,
                .split = std::strcmp(argv[1], "split") == 0,
                .agents = n,
                .started = std::vector<bool>(n, false)};
    ebt::Registry registry;
    ebt::scenarios::register_fight_actions(registry);
    registry.add_latent_action("Patrol", [&moves](ebt::ActionContext& ctx, const ebt::ResumeHandle& handle) {
        moves.request(ctx.agent().seed(), handle);
    });
    const ebt::Tree tree = ebt::scenarios::guard_tree(registry);
    for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.mode = mode, .seed = i});

    std::vector<ebt::ResumeHandle> now;
    double resume_ns = 0, step_ns = 0;
    std::size_t completed = 0;
    for (int f = 0; f < 200 + frames; ++f) {
        const auto t0 = Clock::now();
        now.swap(moves.due[world.frame() % moves.due.size()]);
        const std::size_t resumed = world.resume_all(now, ebt::Status::Success);
        now.clear();
        const auto t1 = Clock::now();
        world.step(kFrame);
        const auto t2 = Clock::now();
        if (f < 200) continue;
        completed += resumed;
        resume_ns += ns(t1 - t0);
        step_ns += ns(t2 - t1);
    }
    std::printf("%s %s agents %zu: moves per frame %.1f; per move: resumes %.1f ns, step %.1f ns; per agent-frame "
                "%.3f ns; state hash %016llx\n",
                argv[1], mode == ebt::Mode::Event ? "event" : "polling", n, double(completed) / frames,
                resume_ns / double(completed), step_ns / double(completed),
                (resume_ns + step_ns) / frames / double(n), static_cast<unsigned long long>(world.state_hash()));
    return 0;
}
