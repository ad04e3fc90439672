// Test helper for the replay CLI tests (tests/replay/replay_cli.cmake): changes one recorded answer.
//
//   ebt_tamper_recording IN OUT K
//
// Finds the K-th (from 0) recorded "Update -> Running" call of agent {0, 1} that has no effects
// (record bytes: Call tag 13, index 0, generation 1, the node, kind 1, status 1, flags 0, effect
// count 0), makes its answer Success, and writes the result to OUT. Prints the byte offset changed.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s IN OUT K\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const long wanted = std::atol(argv[3]);
    long seen = 0;
    for (std::size_t i = 0; i + 8 <= bytes.size(); ++i) {
        const unsigned char* b = bytes.data() + i;
        if (b[0] != 13 || b[1] != 0 || b[2] != 1 || b[4] != 1 || b[5] != 1 || b[6] != 0 || b[7] != 0) continue;
        if (seen++ < wanted) continue;
        bytes[i + 5] = 2;  // Status::Success
        std::ofstream out(argv[2], std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        std::printf("changed byte %zu\n", i + 5);
        return out ? 0 : 1;
    }
    std::fprintf(stderr, "%s: only %ld such calls in %s\n", argv[0], seen, argv[1]);
    return 1;
}
