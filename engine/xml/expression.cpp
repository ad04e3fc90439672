// The small expression grammar of ScriptCondition code and _precondition: bool keys, comparisons of
// number keys (< <= > >= == != against a number or a key), == and != of keys of other types with a
// literal form (a quoted 'text', an enum's value name) or a key, registered conditions, true/false, !, &&,
// ^, ||, parentheses. `{key}` names a key explicitly (for a key that
// is named like a registered condition: a bare name is the condition).
#include "xml/xml_internal.hpp"

#include <ebt/limits.hpp>

#include <algorithm>

namespace ebt::xml::detail {

namespace {

constexpr int kMaxDepth = static_cast<int>(limits::kMaxPredicateDepth);        // nesting of parentheses and '!'
constexpr int kMaxOperands = static_cast<int>(limits::kMaxPredicateOperands);  // names and constants per expression

// Names (keys, conditions) are runs of any characters but blanks, control characters and the
// grammar's own: ! & | ^ ( ) { } , = ; " ' < >
bool ident_char(char c) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7F) return false;
    switch (c) {
    case '!': case '&': case '|': case '^': case '(': case ')': case '{': case '}':
    case ',': case '=': case ';': case '"': case '\'': case '<': case '>': return false;
    default: return true;
    }
}
bool ident_start(char c) { return ident_char(c); }

class Parser {
public:
    Parser(std::string_view code, const Registry& registry, std::vector<ExprKeyUse>& keys, const KeyTypeLookup& key_type)
        : s_(code), registry_(registry), keys_(keys), key_type_(key_type) {}

    Predicate parse() {
        skip();
        if (pos_ == s_.size()) fail("empty expression");
        Predicate p = parse_or(0);
        skip();
        if (pos_ != s_.size()) fail(std::string("unexpected '") + s_[pos_] + "'");
        return p;
    }

private:
    [[noreturn]] void fail(std::string message) const { throw ExprError{pos_, std::move(message)}; }

    void skip() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    }
    bool eat(std::string_view token) {
        skip();
        if (s_.substr(pos_, token.size()) == token) {
            pos_ += token.size();
            return true;
        }
        return false;
    }
    // '&' alone or '|' alone are BehaviorTree.CPP bit operators: refuse them clearly.
    bool at_single(char c) const {
        return pos_ < s_.size() && s_[pos_] == c && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != c);
    }

    Predicate parse_or(int depth) {
        Predicate p = parse_and(depth);
        while (eat("||")) p = p || parse_and(depth);
        skip();
        if (at_single('|')) fail("'|' is not an operator here (use '||')");
        return p;
    }
    Predicate parse_and(int depth) {
        Predicate p = parse_xor(depth);
        while (eat("&&")) p = p && parse_xor(depth);
        skip();
        if (at_single('&')) fail("'&' is not an operator here (use '&&')");
        return p;
    }
    Predicate parse_xor(int depth) {
        Predicate p = parse_unary(depth);
        while (eat("^")) p = p ^ parse_unary(depth);
        return p;
    }
    Predicate parse_unary(int depth) {
        if (depth > kMaxDepth) fail("expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
        skip();
        if (pos_ >= s_.size()) fail("expression ends where an operand was expected");
        if (s_[pos_] == '!' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '=')) {
            ++pos_;
            skip();
            // "!key" and "!{key}" are the check "key == false"
            if (pos_ < s_.size() && s_[pos_] == '{') {
                count_operand();
                const std::size_t save = pos_;
                std::string name = braced_key();
                if (!at_comparison()) {
                    keys_.push_back({name, type_of<bool>(), "check"});
                    return Predicate::is(std::move(name), false);
                }
                --operands_;
                pos_ = save;
                return !parse_unary(depth + 1);
            }
            const std::size_t save = pos_;
            if (pos_ < s_.size() && ident_start(s_[pos_])) {
                std::string name = ident();
                skip();
                const bool call = pos_ < s_.size() && s_[pos_] == '(';
                if (name != "true" && name != "false" && !registry_.find_condition(name) && !call && !at_comparison()) {
                    count_operand();
                    keys_.push_back({name, type_of<bool>(), "check"});
                    return Predicate::is(std::move(name), false);
                }
                pos_ = save;
            }
            return !parse_unary(depth + 1);
        }
        if (s_[pos_] == '(') {
            ++pos_;
            Predicate p = parse_or(depth + 1);
            if (!eat(")")) fail("missing ')'");
            return p;
        }
        if (s_[pos_] == '{') {
            count_operand();
            const std::size_t name_at = pos_;
            std::string name = braced_key();
            if (at_comparison()) return comparison(std::move(name), name_at);
            keys_.push_back({name, type_of<bool>(), "check"});
            return Predicate::is(std::move(name), true);
        }
        if (!ident_start(s_[pos_])) fail(std::string("unexpected '") + s_[pos_] + "' where a key, a condition, true or false was expected");
        count_operand();
        const std::size_t name_at = pos_;
        std::string name = ident();
        if (name == "true") return True();
        if (name == "false") return False();
        if (at_comparison()) {
            if (registry_.find_condition(name)) {
                pos_ = name_at;
                fail("'" + name + "' is a registered condition; write {" + name + "} to compare the key");
            }
            return comparison(std::move(name), name_at);
        }
        if (const ConditionSpec* spec = registry_.find_condition(name)) return condition(name, *spec, name_at);
        skip();
        if (pos_ < s_.size() && s_[pos_] == '(') {
            pos_ = name_at;
            fail("'" + name + "' is not a registered condition");
        }
        keys_.push_back({name, type_of<bool>(), "check"});
        return Predicate::is(std::move(name), true);
    }

    // Whether a comparison operator follows (after blanks); leaves pos_ where it was.
    bool at_comparison() {
        const std::size_t save = pos_;
        skip();
        const bool at = pos_ < s_.size() && (s_[pos_] == '<' || s_[pos_] == '>' || s_.substr(pos_, 2) == "==" || s_.substr(pos_, 2) == "!=");
        pos_ = save;
        return at;
    }

    // The comparison of key `name` (read at `name_at`) with what follows: an operator, then a
    // number literal (parsed as the key's type) or a key of the same type.
    Predicate comparison(std::string name, std::size_t name_at) {
        skip();
        Comparison op = Comparison::Less;
        if (eat("<=")) op = Comparison::LessEqual;
        else if (eat(">=")) op = Comparison::GreaterEqual;
        else if (eat("==")) op = Comparison::Equal;
        else if (eat("!=")) op = Comparison::NotEqual;
        else if (eat("<")) op = Comparison::Less;
        else if (eat(">")) op = Comparison::Greater;
        else fail("expected a comparison operator");
        const std::string what = std::string("comparison '") + name + " " + to_string(op) + " ...'";
        const TypeInfo* type = key_type_ ? key_type_(name) : nullptr;
        if (!type) {
            pos_ = name_at;
            fail("key '" + name + "' is compared but its type is not known: declare it in the tree's <Blackboard> with a number type");
        }
        const bool number = ebt::detail::is_number(type);
        if (!number && !type->text) {
            pos_ = name_at;
            fail("key '" + name + "' is " + type->name + "; a comparison needs a number key (int, unsigned, long, long long, float or double) "
                 "or, for == and !=, a key of a type with literals (string, an enum added with add_enum)");
        }
        if (!number && op != Comparison::Equal && op != Comparison::NotEqual) {
            pos_ = name_at;
            fail("key '" + name + "' is " + xml_type_name(type) + ", which has no order: compare it with == or !=");
        }
        keys_.push_back({name, type, what});
        skip();
        if (pos_ >= s_.size()) fail(number ? "expression ends where a number or a key was expected" : "expression ends where a value or a key was expected");
        const char c = s_[pos_];
        if (!number && (c == '\'' || c == '"')) {  // a quoted literal: 'alarm'
            const std::size_t start = pos_;
            const std::size_t close = s_.find(c, pos_ + 1);
            if (close == std::string_view::npos) fail(std::string("missing the closing ") + c);
            const std::string text(s_.substr(pos_ + 1, close - pos_ - 1));
            pos_ = close + 1;
            return literal_comparison(std::move(name), op, type, text, start);
        }
        if (!number && type->text && !type->text->names.empty() && ident_start(c)) {  // an enum's value name: Alert
            const std::size_t start = pos_;
            std::string word = ident();
            for (const auto& value : type->text->names)
                if (value.first == word) return literal_comparison(std::move(name), op, type, word, start);
            pos_ = start;  // not one of its names: a key
        }
        if (number && ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.')) {
            const std::size_t start = pos_;
            while (pos_ < s_.size() && ((s_[pos_] >= '0' && s_[pos_] <= '9') || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
                                        ((s_[pos_] == '-' || s_[pos_] == '+') && (pos_ == start || s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))))
                ++pos_;
            const std::string text(s_.substr(start, pos_ - start));
            Value value(type);
            if (!parse_value(type, text, value.data())) {
                pos_ = start;
                fail("'" + text + "' is not a valid " + type->name + " (the type of key '" + name + "')");
            }
            return Predicate::compare(std::move(name), op, type, value.data());
        }
        const std::size_t other_at = pos_;
        std::string other;
        if (c == '{') {
            other = braced_key();
        } else if (ident_start(c)) {
            other = ident();
            if (!is_identifier(other)) {
                pos_ = other_at;
                fail("expected " + expected(type) + " after '" + std::string(to_string(op)) + "'");
            }
        } else {
            fail("expected " + expected(type) + " after '" + std::string(to_string(op)) + "'");
        }
        const TypeInfo* other_type = key_type_ ? key_type_(other) : nullptr;
        if (other_type != type) {
            pos_ = other_at;
            if (!other_type)
                fail("key '" + other + "' is compared but its type is not known: declare it in the tree's <Blackboard> as " + xml_type_name(type));
            fail("'" + name + "' is " + type->name + " but '" + other + "' is " + other_type->name + ": compare keys of one type");
        }
        keys_.push_back({other, type, what});
        return Predicate::compare(std::move(name), op, KeyRef{std::move(other)});
    }

    static std::string expected(const TypeInfo* type) {
        if (ebt::detail::is_number(type)) return "a number or a key";
        if (type->text && !type->text->names.empty()) return "one of " + xml_type_name(type) + "'s names" + allowed_names(type) + ", a quoted value or a key";
        return "a quoted value ('text') or a key";
    }

    // Key `name` of a type with a text form compared with the literal `text` (read at `at`).
    Predicate literal_comparison(std::string name, Comparison op, const TypeInfo* type, const std::string& text, std::size_t at) {
        Value value(type);
        if (!parse_value(type, text, value.data())) {
            pos_ = at;
            fail(not_a_valid(type, text) + " (the type of key '" + name + "')");
        }
        return Predicate::compare(std::move(name), op, type, value.data());
    }

    // "{key}" at pos_: the key's name (a key, never a condition).
    std::string braced_key() {
        const std::size_t open = pos_;
        ++pos_;
        const std::size_t close = s_.find('}', pos_);
        if (close == std::string_view::npos) fail("missing '}'");
        std::string name(s_.substr(pos_, close - pos_));
        if (!is_identifier(name)) {
            pos_ = open;
            fail("'{" + name + "}' is not a valid key reference");
        }
        pos_ = close + 1;
        return name;
    }

    void count_operand() {
        if (++operands_ > kMaxOperands) fail("expression has more than " + std::to_string(kMaxOperands) + " operands");
    }

    std::string ident() {
        const std::size_t start = pos_;
        while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
        return std::string(s_.substr(start, pos_ - start));
    }

    Predicate condition(const std::string& name, const ConditionSpec& spec, std::size_t name_at) {
        Bindings bindings;
        skip();
        if (pos_ < s_.size() && s_[pos_] == '(') {
            ++pos_;
            skip();
            if (pos_ < s_.size() && s_[pos_] == ')') {
                ++pos_;
            } else {
                for (;;) {
                    skip();
                    const std::size_t port_at = pos_;
                    if (pos_ >= s_.size() || !ident_start(s_[pos_])) fail("expected a port name");
                    std::string port = ident();
                    auto it = std::find_if(spec.ports.begin(), spec.ports.end(), [&](const PortSpec& p) { return p.name == port; });
                    if (it == spec.ports.end()) {
                        pos_ = port_at;
                        fail("condition '" + name + "' has no port '" + port + "'" + port_list(spec));
                    }
                    for (const auto& b : bindings)
                        if (b.first == port) {
                            pos_ = port_at;
                            fail("port '" + port + "' is bound twice");
                        }
                    if (!eat("=")) fail("expected '=' after port '" + port + "'");
                    skip();
                    if (pos_ >= s_.size() || s_[pos_] != '{')
                        fail("port '" + port + "' needs a {key} (literal values are not supported in expressions)");
                    const std::size_t close = s_.find('}', pos_);
                    if (close == std::string_view::npos) fail("missing '}'");
                    std::string key(s_.substr(pos_ + 1, close - pos_ - 1));
                    if (key == "=") key = port;
                    if (key.empty() || !is_identifier(key)) fail("'{" + key + "}' is not a valid key reference");
                    pos_ = close + 1;
                    keys_.push_back({key, it->type, "condition '" + name + "' port '" + port + "'"});
                    bindings.emplace_back(std::move(port), std::move(key));
                    if (eat(")")) break;
                    if (!eat(",")) fail("expected ',' or ')'");
                }
            }
        }
        for (const auto& p : spec.ports) {
            const bool bound = std::any_of(bindings.begin(), bindings.end(), [&](const auto& b) { return b.first == p.name; });
            if (bound) continue;
            // A port left out takes its default key; a literal default needs a literal, which
            // expressions do not have.
            if (p.fallback.kind == PortDefault::Kind::Key) {
                keys_.push_back({p.fallback.key, p.type, "condition '" + name + "' port '" + p.name + "'"});
                bindings.emplace_back(p.name, p.fallback.key);
                continue;
            }
            pos_ = name_at;
            if (p.fallback.kind == PortDefault::Kind::Value)
                fail("condition '" + name + "' port '" + p.name + "' (" + p.type->name + ") has a literal default, which an " +
                     "expression cannot use: write " + name + "(" + p.name + "={key})");
            fail("condition '" + name + "' port '" + p.name + "' (" + p.type->name + ") is not bound: write " + name + "(" +
                 p.name + "={key})");
        }
        // Bindings in the spec's port order.
        Bindings ordered;
        for (const auto& p : spec.ports)
            for (const auto& b : bindings)
                if (b.first == p.name) ordered.push_back(b);
        return Predicate::condition(name, std::move(ordered));
    }

    static std::string port_list(const ConditionSpec& spec) {
        if (spec.ports.empty()) return " (it has no ports)";
        std::string s = " (ports:";
        for (const auto& p : spec.ports) s += " " + p.name;
        return s + ")";
    }

    std::string_view s_;
    const Registry& registry_;
    std::vector<ExprKeyUse>& keys_;
    const KeyTypeLookup& key_type_;
    std::size_t pos_ = 0;
    int operands_ = 0;
};

// Binding strength: || 1, && 2, ^ 3, unary 4, atoms 5.
int strength(const Predicate::Node& p) {
    switch (p.op) {
    case ebt::detail::PredOp::Or: return 1;
    case ebt::detail::PredOp::And: return 2;
    case ebt::detail::PredOp::Xor: return 3;
    case ebt::detail::PredOp::Not: return 4;
    case ebt::detail::PredOp::KeyIs: return p.expected ? 5 : 4;
    default: return 5;
    }
}

void print(const Predicate::Node& p, const Registry& registry, std::string& out) {
    using ebt::detail::PredOp;
    auto operand = [&](const std::shared_ptr<const Predicate::Node>& child, int min_strength) {
        if (!child) throw SaveError("a predicate operand is missing");
        if (strength(*child) < min_strength) {
            out += '(';
            print(*child, registry, out);
            out += ')';
        } else {
            print(*child, registry, out);
        }
    };
    switch (p.op) {
    case PredOp::True: out += "true"; break;
    case PredOp::False: out += "false"; break;
    case PredOp::KeyIs:
        if (!is_identifier(p.name))
            throw SaveError("key '" + p.name + "' cannot be written in an expression (not an identifier)");
        if (!p.expected) out += '!';
        // A key named like a registered condition is written {key}: bare, it would read back as the
        // condition.
        if (registry.find_condition(p.name)) out += '{' + p.name + '}';
        else out += p.name;
        break;
    case PredOp::Compare: {
        auto key = [&](const std::string& name) {
            if (!is_identifier(name)) throw SaveError("key '" + name + "' cannot be written in an expression (not an identifier)");
            out += registry.find_condition(name) ? '{' + name + '}' : name;
        };
        key(p.name);
        out += std::string(" ") + to_string(p.comparison) + " ";
        if (p.literal_type) {
            const std::optional<std::string> text = format_value(p.literal_type, p.literal.data());
            if (!text) throw SaveError("comparison of key '" + p.name + "' with a " + p.literal_type->name + " value cannot be written");
            if (ebt::detail::is_number(p.literal_type) || p.literal_type == type_of<bool>()) {
                out += *text;
            } else if (p.literal_type->text && !p.literal_type->text->names.empty() && is_identifier(*text)) {
                out += *text;  // an enum's value name
            } else {
                const char quote = text->find('\'') == std::string::npos ? '\'' : '"';
                if (text->find(quote) != std::string::npos)
                    throw SaveError("comparison of key '" + p.name + "' with a value holding both ' and \" cannot be written");
                out += quote + *text + quote;
            }
        } else {
            key(p.other_key);
        }
        break;
    }
    case PredOp::Condition:
        if (!is_identifier(p.name)) throw SaveError("condition '" + p.name + "' cannot be written in an expression");
        out += p.name;
        if (!p.bindings.empty()) {
            // Ports bound to their registered default key are left out (they read back the same).
            Bindings written;
            const ConditionSpec* spec = registry.find_condition(p.name);
            for (const auto& b : p.bindings) {
                const std::string& port_name = b.first;  // (clang 14 cannot capture a structured binding)
                const auto it = spec ? std::find_if(spec->ports.begin(), spec->ports.end(), [&](const PortSpec& s) { return s.name == port_name; })
                                     : std::vector<PortSpec>::const_iterator{};
                const bool is_default = spec && it != spec->ports.end() && it->fallback.kind == PortDefault::Kind::Key && it->fallback.key == b.second;
                if (!is_default && !is_identifier(b.second) && spec && it != spec->ports.end() && it->fallback.kind == PortDefault::Kind::Value)
                    throw SaveError("condition '" + p.name + "' port '" + b.first +
                                    "' is bound to a constant (its literal default), which an expression cannot write");
                if (!is_default) written.push_back(b);
            }
            if (written.empty()) break;
            out += '(';
            bool first = true;
            for (const auto& [port, key] : written) {
                if (!first) out += ", ";
                first = false;
                if (!is_identifier(key))
                    throw SaveError("key '" + key + "' cannot be written in an expression (not an identifier)");
                out += port + "={" + key + "}";
            }
            out += ')';
        }
        break;
    case PredOp::Not:
        out += '!';
        operand(p.a, 4);
        break;
    case PredOp::And:
    case PredOp::Or:
    case PredOp::Xor: {
        const int s = strength(p);
        operand(p.a, s);          // left-associative: an equal left operand needs no parentheses
        out += p.op == PredOp::And ? " && " : p.op == PredOp::Or ? " || " : " ^ ";
        operand(p.b, s + 1);      // an equal right operand does (keeps the tree's shape)
        break;
    }
    }
}

}  // namespace

bool is_identifier(std::string_view s) noexcept {
    if (s.empty() || s == "true" || s == "false") return false;
    for (char c : s)
        if (!ident_char(c)) return false;
    return true;
}

Predicate parse_expression(std::string_view code, const Registry& registry, std::vector<ExprKeyUse>& keys,
                           const KeyTypeLookup& key_type) {
    return Parser(code, registry, keys, key_type).parse();
}

void check_expression_size(const Predicate::Node& p) {
    // A loadable expression has at most kMaxOperands leaves, so at most kMaxOperands - 1 binary
    // operators on a path, and at most kMaxDepth + 1 '!' (the last may print as "!key"): anything
    // deeper is refused without walking it recursively.
    const std::size_t max_structure = static_cast<std::size_t>(kMaxOperands + kMaxDepth + 2);
    std::vector<std::pair<const Predicate::Node*, std::size_t>> stack{{&p, 1}};
    std::size_t leaves = 0;
    while (!stack.empty()) {
        const auto [n, depth] = stack.back();
        stack.pop_back();
        if (depth > max_structure)
            throw SaveError("expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
        if (!n->a && !n->b && ++leaves > static_cast<std::size_t>(kMaxOperands))
            throw SaveError("expression has more than " + std::to_string(kMaxOperands) + " operands");
        if (n->a) stack.emplace_back(n->a.get(), depth + 1);
        if (n->b) stack.emplace_back(n->b.get(), depth + 1);
    }
}

std::string print_expression(const Predicate::Node& p, const Registry& registry, const KeyTypeLookup& key_type) {
    check_expression_size(p);
    std::string out;
    print(p, registry, out);
    // The loader's parser decides what loads (nesting of '(' and '!' as written, operands).
    std::vector<ExprKeyUse> keys;
    try {
        (void)parse_expression(out, registry, keys, key_type);
    } catch (const ExprError& e) {
        throw SaveError(e.message);
    }
    return out;
}

}  // namespace ebt::xml::detail
