// Node paths ("/ActiveSelector/Sequence[0]/Action 'Patrol'[1]"): the one formatter behind
// Tree::path and the builder's error messages (private to the engine).
//
// A path names each level from the root down: the node's kind, its label in quotes when it has one,
// and its position among its parent's children in brackets (the root has none). Tree::path formats
// the compiled nodes; the builder formats its source nodes, which it may still change (an Inverter
// over a condition is folded into the condition only when the tree is compiled).
#pragma once

#include <ebt/tree.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::detail {

/// One level of a node path.
struct PathLevel {
    NodeKind kind = NodeKind::Action;
    std::string_view label;       // empty: none
    std::int32_t position = -1;   // among the parent's children; -1 for the root
};

/// How much of a deep path to keep.
enum class PathLength : std::uint8_t {
    Full,   // every level (Tree::path)
    Short,  // past 10 levels, the first 3 and last 4 around "/... N levels ..." (error messages)
};

/// One level as it appears in a path: "Kind", "Kind 'label'", then "[position]" below the root.
std::string format_path_level(const PathLevel& level);

/// The path of a node given its levels from the node up to the root (the order a walk up the parent
/// links produces).
std::string format_node_path(const std::vector<PathLevel>& node_to_root, PathLength length);

}  // namespace ebt::detail
