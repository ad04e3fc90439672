// ebt_replay: replays a recording (ebt_arena --record FILE, or debug::Recorder in a game) without the
// game and checks it frame by frame (docs/debugging.md, "Record and replay").
//
//   ebt_replay FILE [--mode poll|event] [--break-at N]
//
// Prints "identical after N frames" and exits 0, or prints the first divergence and exits 1; a
// recording cut short (a game that crashed) replays up to the cut, says so and exits 0; a file that
// is not a readable recording is an error (exit 2). --break-at N calls
// ebt::debug::replay_breakpoint(N) before frame N: `gdb --args ebt_replay FILE --break-at N`, then
// `break ebt::debug::replay_breakpoint` and `run`.
#include <ebt/debug/file_error.hpp>
#include <ebt/debug/replay.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace {

void usage(std::FILE* out, const char* argv0) {
    std::fprintf(out,
                 "usage: %s FILE [--mode poll|event] [--break-at N]\n"
                 "Replays a recording of ebt agents without the game and checks it frame by frame.\n"
                 "  --mode M       replay every agent in this mode (default: as recorded)\n"
                 "  --break-at N   call ebt::debug::replay_breakpoint(N) just before frame N (for a debugger)\n"
                 "  -h, --help     this help\n"
                 "Prints 'identical after N frames' (exit 0) or the first divergence (exit 1); a recording\n"
                 "cut short (a game that crashed) replays up to the cut and says where it ends (exit 0).\n",
                 argv0);
}

[[noreturn]] void fail(const char* argv0, const std::string& message) {
    std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for the options)\n", argv0, message.c_str(), argv0);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    const char* argv0 = argv[0];
    std::string file;
    ebt::debug::ReplayOptions options;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) fail(argv0, "option " + opt + " needs a value");
            return argv[++i];
        };
        if (opt == "-h" || opt == "--help") {
            usage(stdout, argv0);
            return 0;
        } else if (opt == "--mode") {
            const std::string m = value();
            if (m == "poll") options.mode = ebt::Mode::Polling;
            else if (m == "event") options.mode = ebt::Mode::Event;
            else fail(argv0, "--mode must be 'poll' or 'event', got '" + m + "'");
        } else if (opt == "--break-at") {
            const std::string n = value();
            char* end = nullptr;
            const unsigned long long frame = std::strtoull(n.c_str(), &end, 10);
            if (n.empty() || n[0] == '-' || *end != '\0') fail(argv0, "--break-at needs a frame number, got '" + n + "'");
            options.break_at = frame;
        } else if (!opt.empty() && opt[0] == '-') {
            fail(argv0, "unknown option '" + opt + "'");
        } else if (file.empty()) {
            file = opt;
        } else {
            fail(argv0, "one recording at a time (got '" + file + "' and '" + opt + "')");
        }
    }
    if (file.empty()) fail(argv0, "no recording given");
    try {
        ebt::debug::Replay replay(file, options);
        const bool identical = replay.run();
        std::printf("%s\n", replay.summary().c_str());
        return identical ? 0 : 1;
    } catch (const std::exception& e) {  // FileFormatError: the file, the byte offset and the problem
        std::fprintf(stderr, "%s: error: %s\n", argv0, e.what());
        return 2;
    }
}
