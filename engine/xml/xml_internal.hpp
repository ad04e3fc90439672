// Shared by the XML loader and saver (private to the engine).
#pragma once

#include <ebt/xml.hpp>

#include "tree/tree_data.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::xml::detail {

// ---- node vocabulary ------------------------------------------------------------------------------

enum class Category : std::uint8_t { Control, Decorator, Action, Condition };
const char* to_string(Category c) noexcept;

/// A node name ebt knows, with the kind it builds. `canonical` marks the name save() writes for the
/// kind; `ebt_only` marks ebt's own nodes (exported in the TreeNodesModel).
struct BuiltinNode {
    const char* name;
    NodeKind kind;
    Category category;
    bool canonical;
    bool ebt_only;
};
const std::vector<BuiltinNode>& builtin_nodes();
const BuiltinNode* find_builtin(std::string_view name) noexcept;
const BuiltinNode& canonical_builtin(NodeKind kind) noexcept;

/// The parameters (attributes) a builtin node takes, for messages and the model export.
struct BuiltinParam {
    const char* name;
    const char* type;           // for the model export
    const char* default_value;  // nullptr: required
};
std::vector<BuiltinParam> builtin_params(NodeKind kind);

/// BehaviorTree.CPP nodes ebt does not have, with the reason / the alternative. nullptr if unknown.
const char* unsupported_node(std::string_view name) noexcept;
/// BehaviorTree.CPP's scripting pre/post-condition attributes (not supported: a load error).
bool is_script_attribute(std::string_view name) noexcept;

/// A name usable as an XML element name in the compact form (and not one of ebt's reserved names).
bool is_xml_name(std::string_view s) noexcept;
/// A name usable as a key or condition name in an expression and in "{key}": no blanks, no control
/// characters, none of ! & | ^ ( ) { } , = ; " ' < > (and not "true" or "false").
bool is_identifier(std::string_view s) noexcept;

// ---- expressions (ScriptCondition code, _precondition) ---------------------------------------------

/// A key an expression reads, with the type its use requires.
struct ExprKeyUse {
    std::string key;
    const TypeInfo* type;
    std::string what;  // "check" or "condition 'X' port 'p'"
};

struct ExprError {
    std::size_t position;  // byte offset in the expression
    std::string message;
};

/// Parses an expression over bool keys and registered conditions:
///   expr  := or;  or := and ('||' and)*;  and := xor ('&&' xor)*;  xor := unary ('^' unary)*
///   unary := '!' unary | '(' expr ')' | 'true' | 'false' | KEY | '{' KEY '}'
///          | CONDITION [ '(' port '=' '{' key '}' (',' ...)* ')' ]
/// A name is a condition when the registry has one by that name, otherwise a bool key; `{key}` is
/// always a key.
/// `{=}` binds a port to the key of its own name. Every port of a condition must be bound.
/// Throws ExprError.
Predicate parse_expression(std::string_view code, const Registry& registry, std::vector<ExprKeyUse>& keys);

/// The text of a predicate in the grammar above (parenthesized so that it parses back to the same
/// tree; a key named like a condition of `registry` is written `{key}`). Throws SaveError for a key
/// or condition name the grammar cannot spell.
std::string print_expression(const Predicate::Node& p, const Registry& registry);

}  // namespace ebt::xml::detail
