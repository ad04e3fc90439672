// libFuzzer target: the recording reader and the replay (engine/debug/replay.cpp). Any input must
// replay, diverge, stop where it is cut short (Replay::cut), or be refused with
// debug::FileFormatError; anything else (a crash, a sanitizer report, another exception) is a bug. Seeds: fuzz/corpus_recording/ (recordings of small worlds).
#include <ebt/debug/file_error.hpp>
#include <ebt/debug/replay.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    if (size) std::memcpy(bytes.data(), data, size);
    try {
        ebt::debug::Replay replay(std::move(bytes), "fuzz");
        // A bounded number of frames: a long valid recording is not what is being searched for.
        for (int frame = 0; frame < 200 && replay.step(); ++frame) {
        }
        (void)replay.summary();
    } catch (const ebt::debug::FileFormatError&) {
    }
    return 0;
}
