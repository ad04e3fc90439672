// TraceLogReader: decodes a trace log (trace_log_format.hpp) record by record, filters, and prints
// records for people (format) and as JSON Lines (json).
#include <ebt/debug/trace_log.hpp>

#include "debug/binary_io.hpp"
#include "debug/trace_log_format.hpp"

#include <algorithm>
#include <cstring>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace ebt::debug {

namespace {

constexpr std::array<const char*, kLogKindCount> kLogKindNames{"initialize", "update", "terminate", "guard",
                                                                "condition",  "error",  "change"};

std::vector<std::byte> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileFormatError(path, 0, "cannot open the file for reading");
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw FileFormatError(path, 0, "cannot read the file");
    std::vector<std::byte> bytes(chars.size());
    if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

std::string handle_text(AgentHandle h) { return std::to_string(h.index) + ":" + std::to_string(h.generation); }

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += ch;
            }
        }
    }
    out += '"';
}

const std::string kEmpty;

}  // namespace

const char* to_string(LogKind kind) noexcept {
    const auto i = static_cast<std::size_t>(kind);
    return i < kLogKindNames.size() ? kLogKindNames[i] : "?";
}

std::optional<LogKind> log_kind_from_string(std::string_view name) noexcept {
    for (std::size_t i = 0; i < kLogKindNames.size(); ++i)
        if (name == kLogKindNames[i]) return static_cast<LogKind>(i);
    return std::nullopt;
}

bool path_matches(std::string_view pattern, std::string_view path) noexcept {
    // Glob with '*' and '?', iteratively: on a mismatch, let the last '*' swallow one more character.
    std::size_t p = 0, s = 0, star = std::string_view::npos, resume = 0;
    while (s < path.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == path[s])) {
            ++p;
            ++s;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = s;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

TraceLogReader::TraceLogReader(const std::string& path) : TraceLogReader(read_file(path), path) {}

TraceLogReader::TraceLogReader(std::vector<std::byte> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {
    io::ByteReader header(bytes_.data(), bytes_.size(), name_);
    if (bytes_.size() < tracelog::kMagic.size() || std::memcmp(bytes_.data(), tracelog::kMagic.data(), tracelog::kMagic.size()) != 0)
        header.fail("not a trace log (an ebt trace log starts with \"EBTLOG\")");
    version_ = header.header(tracelog::kMagic, tracelog::kKindName, tracelog::kVersion, tracelog::kVersion);
    pos_ = block_end_ = cursor_ = static_cast<std::size_t>(header.offset());
    scan_blocks();
}

void TraceLogReader::scan_blocks() {
    // Walks the block headers: where the sound blocks end, whether the end block is there, and if the
    // file was cut, where (the records before the cut are still given).
    std::size_t at = pos_;
    while (true) {
        if (at == bytes_.size()) {
            truncated_ = true;
            cut_ = FileFormatError(name_, at,
                                   "truncated: the log ends without its end block (the program writing it stopped before "
                                   "close(), or the file was cut between blocks)")
                       .what();
            break;
        }
        io::ByteReader r(bytes_.data() + at, bytes_.size() - at, name_, at);
        if (r.remaining() < tracelog::kBlockHeaderBytes) {
            truncated_ = true;
            cut_ = FileFormatError(name_, at, "truncated: the file ends inside a block header (a crash while writing?)").what();
            break;
        }
        const std::uint8_t kind = r.u8();
        const std::uint32_t length = r.u32();
        if (kind != tracelog::kRecordsBlock && kind != tracelog::kEndBlock) {
            cut_ = FileFormatError(name_, at, "corrupt: a block of unknown kind " + std::to_string(kind)).what();
            break;
        }
        if (length > r.remaining()) {
            truncated_ = true;
            cut_ = FileFormatError(name_, at,
                                   "truncated: the file ends inside a block of " + std::to_string(length) + " bytes (" +
                                       std::to_string(r.remaining()) + " there; a crash while writing?)")
                       .what();
            break;
        }
        if (kind == tracelog::kEndBlock) {
            if (length != r.remaining()) cut_ = FileFormatError(name_, at + tracelog::kBlockHeaderBytes + length, "corrupt: bytes after the end block").what();
            break;
        }
        at += tracelog::kBlockHeaderBytes + length;
    }
    records_end_ = at;
}

bool TraceLogReader::next_block() {
    if (pos_ >= records_end_) return false;
    io::ByteReader r(bytes_.data() + pos_, records_end_ - pos_, name_, pos_);
    r.u8();
    const std::uint32_t length = r.u32();
    cursor_ = pos_ + tracelog::kBlockHeaderBytes;
    block_end_ = cursor_ + length;
    pos_ = block_end_;
    return true;
}

bool TraceLogReader::decode(TraceRecord& rec) {
    while (true) {
        if (cursor_ == block_end_ && !next_block()) return false;
        if (cursor_ == block_end_) continue;  // an empty block
        io::ByteReader r(bytes_.data() + cursor_, block_end_ - cursor_, name_, cursor_);
        const std::size_t start = cursor_;
        try {
            const std::uint8_t tag = r.u8();
            if (tag == tracelog::kTree) {
                const std::uint64_t id = r.varint();
                if (id != trees_.size()) r.fail("corrupt: tree " + std::to_string(id) + " where tree " + std::to_string(trees_.size()) + " comes next");
                LoggedTree tree;
                tree.name = r.string();
                const auto nodes = r.varint_at_most(r.remaining(), "node count");  // each node takes 2 bytes at least
                tree.nodes.reserve(static_cast<std::size_t>(nodes));
                for (std::uint64_t i = 0; i < nodes; ++i) {
                    LoggedTree::Node node;
                    node.path = r.string();
                    node.kind = static_cast<NodeKind>(r.u8());
                    if (static_cast<std::uint8_t>(node.kind) > static_cast<std::uint8_t>(NodeKind::Monitor))
                        r.fail("corrupt: node kind " + std::to_string(static_cast<int>(node.kind)));
                    tree.nodes.push_back(std::move(node));
                }
                if (tree.nodes.size() > kNoNode) r.fail("corrupt: a tree of " + std::to_string(tree.nodes.size()) + " nodes");
                const auto keys = r.varint_at_most(std::min<std::uint64_t>(r.remaining(), kNoKey), "key count");
                for (std::uint64_t i = 0; i < keys; ++i) {
                    LoggedTree::Key key;
                    key.name = r.string();
                    key.type = r.string();
                    tree.keys.push_back(std::move(key));
                }
                trees_.push_back(std::move(tree));
            } else if (tag == tracelog::kAgent) {
                const auto index = r.varint_at_most(0xFFFFFFFF, "agent index");
                const auto generation = r.varint_at_most(0xFFFFFFFF, "agent generation");
                const auto tree = r.varint();
                if (tree >= trees_.size()) r.fail("corrupt: an agent of tree " + std::to_string(tree) + ", which the log has not described");
                agent_ = AgentHandle{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(generation)};
                agent_tree_ = static_cast<std::uint32_t>(tree);
                have_agent_ = true;
            } else if (tag == tracelog::kTick) {
                tick_ += static_cast<std::uint64_t>(tracelog::unzigzag(r.varint()));
            } else if ((tag >= tracelog::kEvent && tag <= tracelog::kEventLast) || tag == tracelog::kChange) {
                if (!have_agent_) r.fail("corrupt: a record before any agent record");
                const LoggedTree& tree = trees_[agent_tree_];
                rec = TraceRecord{};
                rec.tick = tick_;
                rec.agent = agent_;
                rec.tree = agent_tree_;
                if (tag == tracelog::kChange) {
                    rec.kind = LogKind::BlackboardChange;
                    const auto key = r.varint();
                    if (key >= tree.keys.size()) r.fail("corrupt: key " + std::to_string(key) + " of a tree with " + std::to_string(tree.keys.size()) + " keys");
                    rec.key = static_cast<KeyId>(key);
                    rec.text = r.string();
                } else {
                    rec.kind = static_cast<LogKind>(tag - tracelog::kEvent);
                    const auto node = r.varint();
                    if (node >= tree.nodes.size()) r.fail("corrupt: node " + std::to_string(node) + " of a tree with " + std::to_string(tree.nodes.size()) + " nodes");
                    rec.node = static_cast<NodeIndex>(node);
                    if (rec.kind == LogKind::Update || rec.kind == LogKind::Terminate) {
                        const std::uint8_t status = r.u8();
                        if (status > static_cast<std::uint8_t>(Status::Aborted)) r.fail("corrupt: status " + std::to_string(status));
                        rec.status = static_cast<Status>(status);
                    } else if (rec.kind == LogKind::GuardEvaluated || rec.kind == LogKind::ConditionEvaluated) {
                        const std::uint8_t result = r.u8();
                        if (result > 1) r.fail("corrupt: a guard result of " + std::to_string(result));
                        rec.result = result == 1;
                    } else if (rec.kind == LogKind::Error) {
                        rec.text = r.string();
                    }
                }
                cursor_ = static_cast<std::size_t>(r.offset());
                ++records_read_;
                return true;
            } else {
                r.fail("corrupt: unknown record tag " + std::to_string(tag));
            }
        } catch (const FileFormatError& e) {
            // Inside a whole block, running out of bytes is corruption, not a cut.
            const std::string what = e.what();
            if (what.find(": truncated:") != std::string::npos)
                throw FileFormatError(name_, start, "corrupt: a record runs past the end of its block");
            throw;
        }
        cursor_ = static_cast<std::size_t>(r.offset());
    }
}

bool TraceLogReader::next(TraceRecord& record, const TraceFilter& filter) {
    if (done_) return false;
    while (true) {
        bool got = false;
        try {
            got = decode(record);
        } catch (const FileFormatError& e) {
            damage_ = e.what();
            done_ = true;
            return false;
        }
        if (!got) {
            damage_ = cut_;
            done_ = true;
            return false;
        }
        if (!(filter.kinds & TraceFilter::kind_bit(record.kind))) continue;
        if (record.tick < filter.first_tick || record.tick > filter.last_tick) continue;
        if (!filter.agents.empty() &&
            std::none_of(filter.agents.begin(), filter.agents.end(), [&](AgentHandle h) {
                return h.index == record.agent.index && (h.generation == 0 || h.generation == record.agent.generation);
            }))
            continue;
        if (!filter.node.empty() && (record.kind == LogKind::BlackboardChange || !path_matches(filter.node, node_path(record))))
            continue;
        return true;
    }
}

std::vector<TraceRecord> TraceLogReader::read_all(const TraceFilter& filter) {
    std::vector<TraceRecord> out;
    for (TraceRecord r; next(r, filter);) out.push_back(std::move(r));
    return out;
}

const std::string& TraceLogReader::node_path(const TraceRecord& record) const {
    if (record.tree >= trees_.size() || record.node >= trees_[record.tree].nodes.size()) return kEmpty;
    return trees_[record.tree].nodes[record.node].path;
}

const std::string& TraceLogReader::tree_name(const TraceRecord& record) const {
    return record.tree < trees_.size() ? trees_[record.tree].name : kEmpty;
}

const std::string& TraceLogReader::key_name(const TraceRecord& record) const {
    if (record.kind != LogKind::BlackboardChange || record.tree >= trees_.size() || record.key >= trees_[record.tree].keys.size())
        return kEmpty;
    return trees_[record.tree].keys[record.key].name;
}

std::string TraceLogReader::format(const TraceRecord& record) const {
    std::string s = std::to_string(record.tick) + " " + handle_text(record.agent) + " " + to_string(record.kind) + " ";
    switch (record.kind) {
    case LogKind::Initialize: return s + node_path(record);
    case LogKind::Update:
    case LogKind::Terminate: return s + node_path(record) + " " + ebt::to_string(record.status);
    case LogKind::GuardEvaluated:
    case LogKind::ConditionEvaluated: return s + node_path(record) + (record.result ? " true" : " false");
    case LogKind::Error: return s + node_path(record) + ": " + record.text;
    case LogKind::BlackboardChange: return s + key_name(record) + " = " + record.text;
    }
    return s;
}

std::string TraceLogReader::json(const TraceRecord& record) const {
    std::string s = "{\"tick\":" + std::to_string(record.tick) + ",\"agent\":\"" + handle_text(record.agent) + "\",\"tree\":";
    append_json_string(s, tree_name(record));
    s += ",\"kind\":\"";
    s += to_string(record.kind);
    s += '"';
    if (record.kind == LogKind::BlackboardChange) {
        s += ",\"key\":";
        append_json_string(s, key_name(record));
        s += ",\"value\":";
        append_json_string(s, record.text);
    } else {
        s += ",\"node\":";
        append_json_string(s, node_path(record));
        if (record.kind == LogKind::Update || record.kind == LogKind::Terminate) {
            s += ",\"status\":\"";
            s += ebt::to_string(record.status);
            s += '"';
        } else if (record.kind == LogKind::GuardEvaluated || record.kind == LogKind::ConditionEvaluated) {
            s += record.result ? ",\"result\":true" : ",\"result\":false";
        } else if (record.kind == LogKind::Error) {
            s += ",\"message\":";
            append_json_string(s, record.text);
        }
    }
    s += '}';
    return s;
}

}  // namespace ebt::debug
