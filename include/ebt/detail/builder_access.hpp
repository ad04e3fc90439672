// BuilderAccess: the TreeBuilder's hooks for loaders and tools, not for trees written in C++.
//
// A loader (ebt's XML loader, or a game's own file format) knows a key's or a value's type only at
// run time, keeps attributes and literal texts it does not interpret so that a saver writes them
// back, and reports a BuildError at its own source position. A tree written in C++ has typed
// key<T>() and port_value() for the first and no use for the others, so TreeBuilder keeps these
// private and this class, which it befriends, forwards to them. Not included by <ebt/ebt.hpp>.
#pragma once

#include <ebt/builder.hpp>

#include <string>

namespace ebt::detail {

struct BuilderAccess {
    /// Declares a key whose type is known only at run time: `initial` points to a value of `type`
    /// (nullptr: all bytes zero).
    static TreeBuilder& declare_key(TreeBuilder& b, std::string name, const TypeInfo* type, const void* initial = nullptr) {
        return b.declare_key(std::move(name), type, initial);
    }
    /// The same for key `key` of shared scope `scope` (TreeBuilder::shared_key).
    static TreeBuilder& declare_shared_key(TreeBuilder& b, std::string scope, std::string key, const TypeInfo* type,
                                           const void* initial = nullptr) {
        return b.declare_shared_key(std::move(scope), std::move(key), type, initial);
    }
    /// TreeBuilder::port_value for a value whose type is known only at run time: `value` points to a `type`.
    static TreeBuilder& port_value(TreeBuilder& b, std::string port, const TypeInfo* type, const void* value) {
        return b.port_value_raw(std::move(port), type, value);
    }
    /// Keeps a free-form attribute on the node a modifier applies to (an XML attribute ebt does not interpret,
    /// written back when the tree is saved). No effect on behavior.
    static TreeBuilder& attribute(TreeBuilder& b, std::string name, std::string value) {
        return b.attribute(std::move(name), std::move(value));
    }
    /// Records that port `port` of the node a modifier applies to (an action or a registered condition) was
    /// given as the literal `text` in a file: its key is a private constant, and savers write the
    /// literal back. No effect on behavior; the key must be declared and bound as usual.
    static TreeBuilder& port_literal(TreeBuilder& b, std::string port, std::string text) {
        return b.port_literal(std::move(port), std::move(text));
    }
    /// After the builder threw a BuildError: the node it is about (its index in the order nodes
    /// were added, subtree nodes included; -1 when none) and the problem without the tree name and
    /// node path, so that a loader can report it at its own source position.
    static const TreeBuilder::ErrorDetail& last_error(const TreeBuilder& b) noexcept { return b.last_error(); }
};

}  // namespace ebt::detail
