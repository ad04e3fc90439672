// Predicate: composable preconditions (True/False/Not/And/Or/Xor over conditions, bool keys and
// comparisons of number keys),
// measured against the predicate limits (include/ebt/limits.hpp) as they are composed.
#include "tree/builder_internal.hpp"

#include <ebt/limits.hpp>

#include <algorithm>

namespace ebt::detail {

std::shared_ptr<Predicate::Node> make_pred(PredOp op) {
    auto n = std::make_shared<Predicate::Node>();
    n->op = op;
    return n;
}

namespace {

// How tightly an operator binds when a predicate is written as an expression (docs/xml.md):
// || 1, && 2, ^ 3, ! (and a negated key check "!k") 4, operands 5.
int strength(const Predicate::Node& n) {
    switch (n.op) {
    case PredOp::Or: return 1;
    case PredOp::And: return 2;
    case PredOp::Xor: return 3;
    case PredOp::Not: return 4;
    case PredOp::KeyIs: return n.expected ? 5 : 4;
    default: return 5;
    }
}

}  // namespace

// Sets `n.depth` and `n.operands` from its operands (see Predicate::Node). The depth is the nesting
// of '!' and of the parentheses that writing the predicate as an expression needs: what the XML
// expression grammar limits, so that a predicate fits in C++ exactly when it fits in a file. Binary
// operators are left-associative: (a && b) && c and a || b && c need no parentheses, a && (b && c)
// and (a || b) && c one pair.
void measure(Predicate::Node& n) {
    auto written = [](const std::shared_ptr<const Predicate::Node>& child, int min_strength) {
        if (!child) return std::uint32_t{0};
        return child->depth + (strength(*child) < min_strength ? 1u : 0u);
    };
    auto count = [](const std::shared_ptr<const Predicate::Node>& child) { return child ? child->operands : 0u; };
    if (n.op == PredOp::Not) {
        n.depth = 1 + written(n.a, 4);
    } else {
        const int s = strength(n);
        n.depth = std::max(written(n.a, s), written(n.b, s + 1));
    }
    n.operands = count(n.a) + count(n.b);
}

// What makes the measured predicate `n` break the limits (limits.hpp), or "" when it fits. `what`
// names the operation that made it ("'&&'", "its preconditions").
std::string predicate_limit_problem(const Predicate::Node& n, const std::string& what) {
    if (n.depth > limits::kMaxPredicateDepth)
        return "predicate nested too deeply: " + what + " would nest it " + std::to_string(n.depth) + " levels deep (at most " +
               std::to_string(limits::kMaxPredicateDepth) + ")";
    if (n.operands > limits::kMaxPredicateOperands)
        return "predicate has too many operands: " + what + " would give it " + std::to_string(n.operands) + " (at most " +
               std::to_string(limits::kMaxPredicateOperands) + ")";
    return {};
}

}  // namespace ebt::detail

namespace ebt {

using detail::make_pred;
using detail::PredOp;

namespace {

// An operator node over `a` (and `b`), refused with BuildError when it breaks the limits: the limits
// hold while a predicate is composed, so no pass over one (resolving, compiling, copying for a
// subtree, saving, destroying) recurses deeper than they allow.
Predicate compose(PredOp op, const char* symbol, const Predicate& a, const Predicate* b) {
    auto n = make_pred(op);
    n->a = a.node();
    if (b) n->b = b->node();
    detail::measure(*n);
    if (std::string problem = detail::predicate_limit_problem(*n, std::string("'") + symbol + "'"); !problem.empty())
        throw BuildError(problem);
    return Predicate(std::move(n));
}

}  // namespace

Predicate Predicate::condition(std::string name, Bindings bindings) {
    auto n = make_pred(PredOp::Condition);
    n->name = std::move(name);
    n->bindings = std::move(bindings);
    return Predicate(std::move(n));
}
Predicate Predicate::is(std::string key, bool expected) {
    auto n = make_pred(PredOp::KeyIs);
    n->name = std::move(key);
    n->expected = expected;
    return Predicate(std::move(n));
}
Predicate Predicate::compare(std::string key, Comparison op, const TypeInfo* type, const void* value) {
    if (!type || !value) throw BuildError("comparison of key '" + key + "' with no value");
    auto n = make_pred(PredOp::Compare);
    n->name = std::move(key);
    n->comparison = op;
    n->literal_type = type;
    n->literal = Value(type, value);
    return Predicate(std::move(n));
}
Predicate Predicate::compare(std::string key, Comparison op, KeyRef other) {
    auto n = make_pred(PredOp::Compare);
    n->name = std::move(key);
    n->comparison = op;
    n->other_key = std::move(other.name);
    return Predicate(std::move(n));
}
const char* to_string(Comparison c) noexcept {
    switch (c) {
    case Comparison::Less: return "<";
    case Comparison::LessEqual: return "<=";
    case Comparison::Greater: return ">";
    case Comparison::GreaterEqual: return ">=";
    case Comparison::Equal: return "==";
    case Comparison::NotEqual: return "!=";
    }
    return "?";
}
Predicate Predicate::constant(bool value) { return Predicate(make_pred(value ? PredOp::True : PredOp::False)); }
Predicate operator!(const Predicate& p) { return compose(PredOp::Not, "!", p, nullptr); }
Predicate operator&&(const Predicate& a, const Predicate& b) { return compose(PredOp::And, "&&", a, &b); }
Predicate operator||(const Predicate& a, const Predicate& b) { return compose(PredOp::Or, "||", a, &b); }
Predicate operator^(const Predicate& a, const Predicate& b) { return compose(PredOp::Xor, "^", a, &b); }

}  // namespace ebt
