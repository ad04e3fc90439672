// Writes a known trace log for the ebt_trace test (tools/tests/run_ebt_trace_test.cmake): two guards
// of the README's tree for 8 frames, in blocks of 256 bytes; guard 1 sees an enemy before frame 2.
// Also writes FILE.cut (the log cut 10 bytes before its end: inside its last block of records, as a
// crash leaves it) and FILE.v9 (the header claims version 9).
//
//   ebt_make_trace_log FILE
#include <ebt/debug/trace_log.hpp>
#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    if (argc != 2) {
        std::fprintf(stderr, "usage: ebt_make_trace_log FILE\n");
        return 2;
    }
    const std::string path = argv[1];
    ebt::Registry actions;
    actions.add_action("Patrol", [](ebt::ActionContext&) { return ebt::Status::Running; });
    actions.add_action("Attack", [](ebt::ActionContext&) { return ebt::Status::Running; });
    const ebt::Tree tree = ebt::TreeBuilder("guard", actions)
                               .key<bool>("enemy_seen")
                               .active_selector()
                               .sequence()
                               .label("engage")
                               .check("enemy_seen")
                               .action("Attack")
                               .back()
                               .action("Patrol")
                               .back()
                               .end();
    ebt::World world;
    world.spawn(tree);
    const ebt::AgentHandle seer = world.spawn(tree);
    {
        ebt::debug::TraceLogWriter log(path, {.block_bytes = 256});
        log.attach(world);
        for (int frame = 0; frame < 8; ++frame) {
            if (frame == 2) world.at(seer).blackboard().set("enemy_seen", true);
            world.step(50ms);
        }
        log.close();
    }
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path + ".cut", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 10));
    std::vector<char> v9 = bytes;
    v9[8] = 9;
    std::ofstream(path + ".v9", std::ios::binary).write(v9.data(), static_cast<std::streamsize>(v9.size()));
    return 0;
}
