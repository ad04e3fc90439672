// The size limits every tree obeys, however it is made (TreeBuilder, the XML loader) and written
// (xml::save). One set of numbers for both sides, so that a tree that builds also saves, and a saved
// file loads back: the builder reports a breach with BuildError, the loader with LoadError
// (file:line:column) and the saver with SaveError. The engine's recursive passes are bounded by them.
#pragma once

#include <cstdint>

namespace ebt::limits {

/// Nodes in one tree, subtrees expanded (node indices are 15-bit).
inline constexpr std::uint32_t kMaxNodes = 32767;
/// Depth of a tree, subtrees expanded: the root is at depth 1, its children at depth 2, ...
inline constexpr std::uint32_t kMaxDepth = 200;
/// Nesting of a guard predicate (Not/And/Or/Xor in C++, '!' and parentheses in XML).
inline constexpr std::uint32_t kMaxPredicateDepth = 32;
/// Conditions and constants in one guard predicate.
inline constexpr std::uint32_t kMaxPredicateOperands = 256;
/// Ports of one action or condition.
inline constexpr std::uint32_t kMaxPorts = 255;
/// The latest time an agent or World clock may reach, in microseconds (2^61 us, about 73,000
/// years). A tick or step that would pass it is refused with UsageError; deadlines further away
/// than that (a Wait or Cooldown of Duration::max()) never come.
inline constexpr std::int64_t kMaxClockMicroseconds = std::int64_t{1} << 61;

}  // namespace ebt::limits
