// Shared by the XML loader and saver (private to the engine).
#pragma once

#include <ebt/xml.hpp>

#include "tree/tree_data.hpp"

#include <cstddef>
#include <cstdint>
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

// ---- limits the loader and the saver share (besides include/ebt/limits.hpp) ------------------------

/// Durations in XML (msec, delay_msec) are milliseconds below 2^50 (about 35,000 years), with up to
/// 3 decimals.
inline constexpr std::int64_t kMaxDurationMilliseconds = std::int64_t{1} << 50;
/// A duration (in microseconds) XML can write and read back: 0 <= micros < 2^50 ms.
inline bool duration_in_range(std::int64_t micros) noexcept {
    return micros >= 0 && micros / 1000 < kMaxDurationMilliseconds;
}

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

/// The declared type of key `name` as far as the caller knows it (nullptr: unknown). Comparisons
/// need it: their literal is parsed as the key's type.
using KeyTypeLookup = std::function<const TypeInfo*(const std::string& name)>;

/// Parses an expression over bool keys, comparisons of number keys and registered conditions:
///   expr  := or;  or := and ('||' and)*;  and := xor ('&&' xor)*;  xor := unary ('^' unary)*
///   unary := '!' unary | '(' expr ')' | 'true' | 'false' | KEY | '{' KEY '}' | cmp
///   cmp   := (KEY | '{' KEY '}') ('<' | '<=' | '>' | '>=' | '==' | '!=') (NUMBER | KEY | '{' KEY '}')
///          | CONDITION [ '(' port '=' '{' key '}' (',' ...)* ')' ]
/// A name is a condition when the registry has one by that name, otherwise a bool key; `{key}` is
/// always a key.
/// `{=}` binds a port to the key of its own name. Every port of a condition must be bound.
/// A comparison is one operand: `!a < 5` is `!(a < 5)`. Its keys must be known to `key_type` with a
/// number type (the same one when both sides are keys); its number is parsed as the key's type.
/// Throws ExprError.
Predicate parse_expression(std::string_view code, const Registry& registry, std::vector<ExprKeyUse>& keys,
                           const KeyTypeLookup& key_type = {});

/// The text of a predicate in the grammar above (parenthesized so that it parses back to the same
/// tree; a key named like a condition of `registry` is written `{key}`). Throws SaveError for a key
/// or condition name the grammar cannot spell, and for a predicate parse_expression would refuse
/// (more than limits::kMaxPredicateOperands operands, nested deeper than limits::kMaxPredicateDepth):
/// the text is parsed back to check it, so that load and save enforce the same limits.
std::string print_expression(const Predicate::Node& p, const Registry& registry, const KeyTypeLookup& key_type = {});
/// The part of print_expression's check that needs no recursion: throws SaveError for a predicate
/// with too many operands or so deep that it cannot be within the nesting limit. Makes walking the
/// predicate recursively safe afterwards.
void check_expression_size(const Predicate::Node& p);

}  // namespace ebt::xml::detail
