// ebt_trace: prints a trace log (written by ebt::debug::TraceLogWriter, e.g. `ebt_arena --log FILE`),
// one line per record, filtered, as text for people or as JSON Lines for other tools.
//
//   ebt_trace FILE [--agent H[,H...]] [--node PATH] [--ticks A..B] [--kind K[,K...]] [--json]
//
// Exit status: 0 the log was printed; 1 the file could not be read (missing, not a trace log, another
// format version); 2 bad command line; 3 the log is damaged (cut short by a crash, corrupt): the records
// before the damage were printed, then the damage is reported on stderr.
#include <ebt/debug/trace_log.hpp>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: ebt_trace FILE [--agent H[,H...]] [--node PATH] [--ticks A..B] [--kind K[,K...]] [--json]\n"
    "\n"
    "Prints a trace log (ebt_arena --log FILE writes one), one line per record:\n"
    "  TICK INDEX:GENERATION KIND NODE-PATH [STATUS | true/false | : MESSAGE]   or   TICK H change KEY = VALUE\n"
    "\n"
    "  --agent H     only agent H: INDEX:GENERATION, or INDEX for every generation of that slot\n"
    "  --node PATH   only the node PATH, exactly, or a glob ('*' any characters, '?' one):\n"
    "                --node \"/ActiveSelector/Sequence 'engage'[0]*\" keeps a branch (drops changes)\n"
    "  --ticks A..B  only ticks A to B (inclusive); A.. and ..B leave an end open; A is one tick\n"
    "  --kind K,...  only these kinds: initialize, update, terminate, guard, condition, error, change\n"
    "  --json        JSON Lines: one object per record\n"
    "\n"
    "Exit status: 0 printed; 1 the file cannot be read; 2 bad arguments; 3 the log is damaged (cut short\n"
    "by a crash?): the records before the damage were printed.\n";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "ebt_trace: %s\n(ebt_trace --help shows the options)\n", message.c_str());
    return 2;
}

bool parse_u64(std::string_view s, std::uint64_t& out) {
    if (s.empty()) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
    return ec == std::errc() && end == s.data() + s.size();
}

bool parse_u32(std::string_view s, std::uint32_t& out) {
    std::uint64_t v = 0;
    if (!parse_u64(s, v) || v > 0xFFFFFFFFu) return false;
    out = static_cast<std::uint32_t>(v);
    return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    while (true) {
        const std::size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos) return parts;
        s.remove_prefix(at + 1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    using namespace ebt::debug;
    std::string file;
    TraceFilter filter;
    bool json = false;
    bool kinds_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--json") {
            json = true;
        } else if (arg == "--agent") {
            const char* v = value();
            if (!v) return usage_error("--agent needs a handle (INDEX:GENERATION or INDEX)");
            for (std::string_view h : split(v, ',')) {
                const std::size_t colon = h.find(':');
                ebt::AgentHandle handle{0, 0};
                const bool ok = colon == std::string_view::npos
                                    ? parse_u32(h, handle.index)
                                    : parse_u32(h.substr(0, colon), handle.index) && parse_u32(h.substr(colon + 1), handle.generation) &&
                                          handle.generation != 0;
                if (!ok) return usage_error("--agent: '" + std::string(h) + "' is not a handle (INDEX:GENERATION, e.g. 12:1, or INDEX)");
                filter.agents.push_back(handle);
            }
        } else if (arg == "--node") {
            const char* v = value();
            if (!v || !*v) return usage_error("--node needs a node path or a glob");
            filter.node = v;
        } else if (arg == "--ticks") {
            const char* v = value();
            if (!v) return usage_error("--ticks needs a range A..B");
            const std::string_view range = v;
            const std::size_t dots = range.find("..");
            bool ok = true;
            if (dots == std::string_view::npos) {
                ok = parse_u64(range, filter.first_tick);
                filter.last_tick = filter.first_tick;
            } else {
                const std::string_view a = range.substr(0, dots), b = range.substr(dots + 2);
                if (!a.empty()) ok = ok && parse_u64(a, filter.first_tick);
                if (!b.empty()) ok = ok && parse_u64(b, filter.last_tick);
                ok = ok && !(a.empty() && b.empty());
            }
            if (!ok) return usage_error("--ticks: '" + std::string(range) + "' is not a tick range (A..B, A.., ..B or A)");
            if (filter.first_tick > filter.last_tick)
                return usage_error("--ticks: the range " + std::string(range) + " is empty (its start is after its end)");
        } else if (arg == "--kind") {
            const char* v = value();
            if (!v) return usage_error("--kind needs kinds");
            if (!kinds_given) filter.kinds = 0;
            kinds_given = true;
            for (std::string_view k : split(v, ',')) {
                const auto kind = log_kind_from_string(k);
                if (!kind)
                    return usage_error("--kind: unknown kind '" + std::string(k) +
                                       "' (the kinds: initialize, update, terminate, guard, condition, error, change)");
                filter.kinds |= TraceFilter::kind_bit(*kind);
            }
        } else if (!arg.empty() && arg[0] == '-') {
            return usage_error("unknown option '" + std::string(arg) + "'");
        } else if (file.empty()) {
            file = arg;
        } else {
            return usage_error("one log at a time: '" + file + "' and '" + std::string(arg) + "'");
        }
    }
    if (file.empty()) return usage_error("no log file given");

    try {
        TraceLogReader reader(file);
        std::string line;
        for (TraceRecord record; reader.next(record, filter);) {
            line = json ? reader.json(record) : reader.format(record);
            line += '\n';
            std::fwrite(line.data(), 1, line.size(), stdout);
        }
        std::fflush(stdout);
        if (!reader.damage().empty()) {
            std::fprintf(stderr, "ebt_trace: %s\nebt_trace: the %llu records before it were read\n", reader.damage().c_str(),
                         static_cast<unsigned long long>(reader.records_read()));
            return 3;
        }
    } catch (const FileFormatError& e) {
        std::fprintf(stderr, "ebt_trace: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ebt_trace: %s\n", e.what());
        return 1;
    }
    return 0;
}
