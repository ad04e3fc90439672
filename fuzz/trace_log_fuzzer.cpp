// libFuzzer target over the trace log reader (<ebt/debug/trace_log.hpp>): any input must either be
// refused at opening with ebt::debug::FileFormatError, or give records (each printable as text and as
// JSON, naming nodes and keys of trees the log described) until its end or until damage that the
// reader reports in damage(). Anything else (another exception, a crash, a sanitizer report, a hang,
// a record naming a node its tree does not have) is a bug. Built by fuzz/CMakeLists.txt; run with
// fuzz/run.sh SECONDS. Seeds: fuzz/corpus_trace_log/.
#include <ebt/debug/trace_log.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(data[i]);
    try {
        ebt::debug::TraceLogReader reader(std::move(bytes), "fuzz.ebtlog");
        std::size_t printed = 0;
        for (ebt::debug::TraceRecord record; reader.next(record);) {
            if (record.tree >= reader.trees().size()) {
                std::fprintf(stderr, "a record of tree %u, of %zu described\n", record.tree, reader.trees().size());
                std::abort();
            }
            const auto& tree = reader.trees()[record.tree];
            const bool change = record.kind == ebt::debug::LogKind::BlackboardChange;
            if (change ? record.key >= tree.keys.size() : record.node >= tree.nodes.size()) {
                std::fprintf(stderr, "a record names a node or key its tree does not have\n");
                std::abort();
            }
            printed += reader.format(record).size() + reader.json(record).size();
        }
        // Reading stopped at the end or at damage; a second call gives nothing more.
        ebt::debug::TraceRecord again;
        if (reader.next(again)) {
            std::fprintf(stderr, "next() gave a record after it had returned false\n");
            std::abort();
        }
        static_cast<void>(printed);
    } catch (const ebt::debug::FileFormatError&) {
        return 0;  // refused at opening with a message: fine
    }
    return 0;
}
