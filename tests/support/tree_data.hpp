// White-box access to a tree's compiled definition (engine/tree/tree_data.hpp) for tests that check
// what the builder or the XML loader produced: node counts, kept attributes, literals.
#pragma once

#include "tree/tree_data.hpp"

#include <ebt/detail/engine_access.hpp>

namespace ebt::test {

inline const detail::TreeData& data_of(const Tree& tree) { return detail::EngineAccess::tree_data(tree); }

}  // namespace ebt::test
