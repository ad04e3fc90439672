// TraceLogWriter: records the events and blackboard changes of chosen agents into a trace log
// (the format: trace_log_format.hpp).
#include <ebt/debug/trace_log.hpp>

#include <ebt/detail/engine_access.hpp>
#include <ebt/signals.hpp>
#include <ebt/xml.hpp>

#include "debug/binary_io.hpp"
#include "debug/trace_log_format.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ebt::debug {

namespace {
bool handle_less(AgentHandle a, AgentHandle b) noexcept {
    return a.index != b.index ? a.index < b.index : a.generation < b.generation;
}
}  // namespace

/// The writer's state: the options, the sink (a file or memory), the buffered records, and what the
/// records written so far have told the reader (trees, current agent, current tick).
struct TraceLogWriter::Impl {
    TraceLogOptions options;
    std::vector<AgentHandle> chosen;  // options.agents, sorted; empty: all
    std::string path;                 // the file, or "(memory)" (names the log in errors)
    std::FILE* file = nullptr;
    std::vector<std::byte> memory;
    io::ByteWriter buffer;            // records not yet written as a block
    io::ByteWriter file_header;       // the file header until it goes out with the first block
    std::vector<Tree> trees;          // in the order of their ids (kept alive so that addresses stay unique)
    const detail::TreeData* last_tree = nullptr;
    std::uint32_t last_tree_id = 0;
    AgentHandle agent;                // the current agent, once have_agent
    bool have_agent = false;
    std::uint64_t tick = 0;           // the current tick (0 before the first tick record)
    std::uint64_t record_count = 0;
    std::uint64_t bytes = 0;
    std::string error;
    bool closed = false;
    World* world = nullptr;
    std::vector<boost::signals2::scoped_connection> connections;  // change buses watched
    std::vector<std::pair<const Agent*, AgentHandle>> lone_agents;  // TraceLogAgentListener names

    bool wanted(AgentHandle handle) const {
        return chosen.empty() || std::binary_search(chosen.begin(), chosen.end(), handle, handle_less);
    }
    bool writing() const noexcept { return !closed && error.empty(); }

    /// Hands `bytes` to the sink; on a failed write keeps the reason and stops.
    void put(const std::byte* data, std::size_t size) {
        if (!error.empty() || size == 0) return;
        if (!file) {
            memory.insert(memory.end(), data, data + size);
            bytes += size;
            return;
        }
        const std::size_t n = std::fwrite(data, 1, size, file);
        bytes += n;
        if (n != size) fail_write();
    }
    void put(const std::vector<std::byte>& data) { put(data.data(), data.size()); }
    /// A block's header: its kind and its length (u32, little-endian), without the heap.
    void put_block_header(std::uint8_t kind, std::size_t length) {
        std::array<std::byte, tracelog::kBlockHeaderBytes> header{};
        header[0] = static_cast<std::byte>(kind);
        for (int i = 0; i < 4; ++i) header[1 + i] = static_cast<std::byte>((length >> (8 * i)) & 0xFF);
        put(header.data(), header.size());
    }
    void fail_write() {
        const int code = errno;
        error = "trace log '" + path + "': write failed after " + std::to_string(bytes) + " bytes" +
                (code ? std::string(": ") + std::strerror(code) : std::string());
    }
    /// Writes the buffered records as one block.
    void write_block() {
        put_file_header();
        if (buffer.size() == 0) return;
        put_block_header(tracelog::kRecordsBlock, buffer.size());
        put(buffer.bytes());
        buffer.clear();
    }
    void block_if_full() {
        if (buffer.size() >= options.block_bytes) write_block();
    }

    /// The id of `tree` in the log, writing its table first when it is new.
    std::uint32_t tree_id(const Tree& tree) {
        const detail::TreeData* data = &detail::EngineAccess::tree_data(tree);
        if (data == last_tree) return last_tree_id;
        std::uint32_t id = 0;
        while (id < trees.size() && &detail::EngineAccess::tree_data(trees[id]) != data) ++id;
        if (id == trees.size()) {
            trees.push_back(tree);
            buffer.u8(tracelog::kTree);
            buffer.varint(id);
            buffer.string(tree.name());
            buffer.varint(tree.size());
            for (std::size_t i = 0; i < tree.size(); ++i) {
                const auto node = static_cast<NodeIndex>(i);
                buffer.string(tree.path(node));
                buffer.u8(static_cast<std::uint8_t>(tree.kind(node)));
            }
            const auto& keys = tree.schema().keys();
            buffer.varint(keys.size());
            for (const KeyInfo& key : keys) {
                buffer.string(key.name);
                buffer.string(key.type ? key.type->name : "?");
            }
            ++record_count;
        }
        last_tree = data;
        last_tree_id = id;
        return id;
    }
    /// Makes `handle` the current agent (and its tree known), writing what the reader needs.
    void select(AgentHandle handle, const Agent& agent) {
        if (have_agent && handle == this->agent) return;  // a handle names one agent, of one tree
        const std::uint32_t tree = tree_id(agent.tree());
        buffer.u8(tracelog::kAgent);
        buffer.varint(handle.index);
        buffer.varint(handle.generation);
        buffer.varint(tree);
        this->agent = handle;
        have_agent = true;
        ++record_count;
    }
    void set_tick(std::uint64_t t) {
        if (t == tick) return;
        buffer.u8(tracelog::kTick);
        buffer.varint(tracelog::zigzag(static_cast<std::int64_t>(t - tick)));
        tick = t;
        ++record_count;
    }

    void event(AgentHandle handle, const Agent& agent, const TraceEvent& e) {
        if (!writing() || !wanted(handle)) return;
        const bool evaluation = e.kind == TraceKind::GuardEvaluated || e.kind == TraceKind::ConditionEvaluated;
        if (evaluation && !options.guards) return;
        select(handle, agent);
        set_tick(e.tick);
        buffer.u8(static_cast<std::uint8_t>(tracelog::kEvent + static_cast<std::uint8_t>(e.kind)));
        buffer.varint(e.node);
        switch (e.kind) {
        case TraceKind::Update:
        case TraceKind::Terminate: buffer.u8(static_cast<std::uint8_t>(e.status)); break;
        case TraceKind::GuardEvaluated:
        case TraceKind::ConditionEvaluated: buffer.u8(e.result ? 1 : 0); break;
        case TraceKind::Error: buffer.string(e.message); break;
        case TraceKind::Initialize: break;
        }
        ++record_count;
        block_if_full();
    }

    void change(const BlackboardChange& c) {
        if (!writing() || !c.agent) return;
        const Agent& agent = *c.agent;
        AgentHandle handle = detail::EngineAccess::handle(agent);
        if (handle == AgentHandle{}) {  // outside a World: logged when a TraceLogAgentListener names it
            const auto it = std::find_if(lone_agents.begin(), lone_agents.end(), [&](const auto& p) { return p.first == &agent; });
            if (it == lone_agents.end()) return;
            handle = it->second;
        }
        if (!wanted(handle)) return;
        // During a tick the change belongs to that tick; between frames, to the frame that comes next.
        const bool in_world = world && detail::EngineAccess::handle(agent) != AgentHandle{};
        const std::uint64_t t = agent.in_tick() || !in_world ? agent.ticks() : world->frame();
        const KeyInfo& key = c.blackboard.schema().info(c.key);
        const void* value = detail::EngineAccess::raw_values(c.blackboard) + key.offset;
        std::optional<std::string> text = xml::format_value(key.type, value);
        select(handle, agent);
        set_tick(t);
        buffer.u8(tracelog::kChange);
        buffer.varint(c.key);
        if (text) buffer.string(*text);
        else buffer.string(std::string("<") + (key.type ? key.type->name : "?") + ">");
        ++record_count;
        block_if_full();
    }

    void connect(ChangeBus& bus) {
        connections.emplace_back(bus.subscribe([this](const BlackboardChange& c) {
            try {
                change(c);
            } catch (const std::exception& e) {
                if (error.empty()) error = "trace log '" + path + "': " + e.what();
            }
        }));
    }

    /// The file header goes out with the first block (so that a failing disk shows at a block write).
    void start() { file_header.header(tracelog::kMagic, tracelog::kVersion); }
    void put_file_header() {
        if (file_header.size() == 0) return;
        put(file_header.bytes());
        file_header.clear();
    }
    void flush() {
        write_block();
        if (file && error.empty() && std::fflush(file) != 0) fail_write();
    }
    void finish() {
        if (closed) return;
        write_block();
        io::ByteWriter count;
        count.varint(record_count);
        put_block_header(tracelog::kEndBlock, count.size());
        put(count.bytes());
        if (file) {
            if (error.empty() && std::fflush(file) != 0) fail_write();
            if (std::fclose(file) != 0 && error.empty()) fail_write();
            file = nullptr;
        }
        closed = true;
    }
};

TraceLogWriter::TraceLogWriter(const std::string& path, TraceLogOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    impl_->path = path;
    impl_->file = std::fopen(path.c_str(), "wb");
    if (!impl_->file)
        throw TraceLogError("cannot open trace log '" + path + "' for writing: " + std::strerror(errno));
    std::setvbuf(impl_->file, nullptr, _IONBF, 0);  // records are buffered here, and written a block at a time
    impl_->options.block_bytes = std::max<std::size_t>(impl_->options.block_bytes, 256);
    impl_->chosen = impl_->options.agents;
    std::sort(impl_->chosen.begin(), impl_->chosen.end(), handle_less);
    impl_->start();
}

TraceLogWriter::TraceLogWriter(TraceLogOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    impl_->path = "(memory)";
    impl_->options.block_bytes = std::max<std::size_t>(impl_->options.block_bytes, 256);
    impl_->chosen = impl_->options.agents;
    std::sort(impl_->chosen.begin(), impl_->chosen.end(), handle_less);
    impl_->start();
}

TraceLogWriter::~TraceLogWriter() {
    try {
        detach();
    } catch (...) {  // refused during a frame: the world must not be stepping while its listener dies
    }
    impl_->connections.clear();
    impl_->finish();
}

void TraceLogWriter::attach(World& world) {
    if (impl_->world) throw UsageError("TraceLogWriter::attach(): already attached to a World (detach() first)");
    if (impl_->closed) throw UsageError("TraceLogWriter::attach(): the log is closed");
    world.add_listener(this);  // refuses during a frame
    impl_->world = &world;
    if (impl_->options.changes) impl_->connect(world.bus());
}

void TraceLogWriter::detach() {
    if (!impl_->world) return;
    impl_->world->remove_listener(this);
    impl_->world = nullptr;
    impl_->connections.clear();
}

void TraceLogWriter::watch(ChangeBus& bus) {
    if (impl_->options.changes && !impl_->closed) impl_->connect(bus);
}

void TraceLogWriter::on_event(AgentHandle handle, const Agent& agent, const TraceEvent& event) {
    try {
        impl_->event(handle, agent, event);
    } catch (const std::exception& e) {  // out of memory: stop logging rather than disturb the game
        if (impl_->error.empty()) impl_->error = "trace log '" + impl_->path + "': " + e.what();
    }
}

void TraceLogWriter::flush() {
    impl_->flush();
    if (!impl_->error.empty()) throw TraceLogError(impl_->error);
}

void TraceLogWriter::close() {
    if (!impl_->closed) {
        detach();
        impl_->connections.clear();
        impl_->finish();
    }
    if (!impl_->error.empty()) throw TraceLogError(impl_->error);
}

const std::string& TraceLogWriter::error() const noexcept { return impl_->error; }
std::uint64_t TraceLogWriter::records() const noexcept { return impl_->record_count; }
std::uint64_t TraceLogWriter::bytes_written() const noexcept { return impl_->bytes; }
const std::vector<std::byte>& TraceLogWriter::memory() const noexcept { return impl_->memory; }

TraceLogAgentListener::TraceLogAgentListener(TraceLogWriter& writer, const Agent& agent, AgentHandle name)
    : writer_(writer), agent_(agent), name_(name) {
    writer_.impl_->lone_agents.emplace_back(&agent_, name_);
}

TraceLogAgentListener::~TraceLogAgentListener() {
    auto& lone = writer_.impl_->lone_agents;
    lone.erase(std::remove_if(lone.begin(), lone.end(), [&](const auto& p) { return p.first == &agent_; }), lone.end());
}

void TraceLogAgentListener::on_event(const TraceEvent& event) { writer_.on_event(name_, agent_, event); }

}  // namespace ebt::debug
