// Writes the seeds of the snapshot and arena-save fuzzers again (fuzz/corpus_snapshot/,
// fuzz/corpus_arena_save/), as the runs they were saved from: after a change of the snapshot
// format (docs/snapshots.md, "Versions") the old seeds no longer load. Built and run by
// fuzz/make_seeds.sh; not part of the build.
//
//   make_seeds DIR          the six agent seeds and the world seed, into DIR/corpus_snapshot/
//   make_seeds DIR ARENA... each arena save ARENA (a file this build reads) made again by running a
//                           new Arena of its configuration to its frame, into DIR/corpus_arena_save/
//
// The agent seeds: an agent of fuzz::snapshot_tree() (seed 7) in each mode, saved after its 2nd,
// 6th and 10th tick of 50 ms (event_tick1, _tick5, _tick9: the index of the tick, from 0). The world
// seed: fuzz::snapshot_world_run(), saved after it (world_frame6).
#include "arena_scenario.hpp"
#include "snapshot_fuzz_tree.hpp"

#include <ebt/snapshot.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

void write(const std::string& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

std::vector<std::byte> read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::byte> bytes(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
    return bytes;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DIR [ARENA_SAVE...]\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    if (argc == 2) {
        const ebt::Tree tree = ebt::fuzz::snapshot_tree();
        for (const ebt::Mode mode : {ebt::Mode::Event, ebt::Mode::Polling}) {
            ebt::Agent agent(tree, {.mode = mode, .seed = 7});
            for (int tick = 0; tick < 10; ++tick) {
                agent.tick(50ms);
                if (tick == 1 || tick == 5 || tick == 9)
                    write(dir + "/corpus_snapshot/" + (mode == ebt::Mode::Event ? "event" : "polling") + "_tick" +
                              std::to_string(tick) + ".ebtsnap",
                          ebt::save_agent(agent));
            }
        }
        ebt::World world;
        ebt::fuzz::snapshot_world_run(world);
        write(dir + "/corpus_snapshot/world_frame6.ebtsnap", ebt::save_world(world));
        return 0;
    }
    for (int i = 2; i < argc; ++i) {
        const std::string path = argv[i];
        const ebt::scenarios::ArenaSave save = ebt::scenarios::ArenaSave::read(read(path), path);
        ebt::scenarios::Arena arena(save.config());
        while (arena.frame() < save.frame()) arena.step();
        write(dir + "/corpus_arena_save/" + path.substr(path.find_last_of('/') + 1), arena.save());
    }
    return 0;
}
