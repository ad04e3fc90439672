// The node path formatter shared by Tree::path and the builder (see node_path.hpp).
#include "tree/node_path.hpp"

namespace ebt::detail {

std::string format_path_level(const PathLevel& level) {
    std::string part = to_string(level.kind);
    if (!level.label.empty()) {
        part += " '";
        part += level.label;
        part += '\'';
    }
    if (level.position >= 0) {
        part += '[';
        part += std::to_string(level.position);
        part += ']';
    }
    return part;
}

std::string format_node_path(const std::vector<PathLevel>& node_to_root, PathLength length) {
    // A deep path keeps its first 3 and last 4 levels: enough to find the node, short enough to read.
    constexpr std::size_t kHead = 3, kTail = 4;
    const std::size_t levels = node_to_root.size();
    const bool shorten = length == PathLength::Short && levels > kHead + kTail + 3;
    if (levels == 0) return "/";
    std::string out;
    for (std::size_t level = 0; level < levels; ++level) {
        if (shorten && level == kHead) {
            const std::size_t skipped = levels - kHead - kTail;
            out += "/... " + std::to_string(skipped) + " levels ...";
            level += skipped - 1;
            continue;
        }
        out += '/';
        out += format_path_level(node_to_root[levels - 1 - level]);
    }
    return out;
}

}  // namespace ebt::detail
