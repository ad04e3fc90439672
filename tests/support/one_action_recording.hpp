// The smallest recording the replay tests tamper with: one agent whose only action runs for ever,
// frame after frame the same Update call, easy to find in the file.
#pragma once

#include "support/temp_files.hpp"

#include <ebt/debug/record.hpp>
#include <ebt/ebt.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <vector>

namespace ebt::test {

/// Records 10 frames of that agent (50 ms each) into `file` and returns the file's bytes.
inline std::vector<std::byte> record_one_action(const std::filesystem::path& file) {
    Registry game;
    game.add_action("Act", [](ActionContext&) { return Status::Running; });
    debug::Recorder recorder(game);
    const Tree tree = TreeBuilder("one", recorder.registry()).sequence().action("Act").back().end();
    World world;
    recorder.start(world, file);
    world.spawn(tree);
    for (int f = 0; f < 10; ++f) world.step(std::chrono::milliseconds(50));
    recorder.stop();
    return read_bytes(file);
}

}  // namespace ebt::test
