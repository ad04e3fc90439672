// User code plugs into trees as actions and conditions, registered by name.
//
// An ActionSpec is a set of callables (onInitialize, update, onTerminate) plus the blackboard ports it
// reads and writes and how many bytes of per-agent memory each use of it needs. A ConditionSpec is a
// side-effect-free predicate over the blackboard with the ports it reads: the engine re-evaluates a
// guard only when one of those keys changes, so a condition that reads anything else must say so
// with a re-check interval (see ConditionSpec::recheck_interval).
//
// A port may have a default (PortSpec::default_key / default_value, as BehaviorTree.CPP v4's port
// defaults): what a node that leaves the port out is bound to, in code and in XML files.
//
// A Registry maps names to specs; the builder (and the XML loader) resolve node names through it.
// Specs are copied into the tree definitions that use them, so a registry may die before its trees.
#pragma once

#include <ebt/blackboard.hpp>
#include <ebt/handles.hpp>
#include <ebt/status.hpp>
#include <ebt/user_pointer.hpp>

#include <cstddef>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace ebt {

class Agent;
namespace detail {
struct Runtime;
struct EngineAccess;
}

/// Whether a port reads its key, writes it, or both. Informational for the engine (ports are
/// read-write through ActionContext); tools use it: the XML model export (input_port, output_port,
/// inout_port) and the XML loader, which refuses a literal value for an output port.
/// A condition's ports are always read.
enum class PortDirection : std::uint8_t { InOut, In, Out };

/// What a port is bound to when a node does not bind it (BehaviorTree.CPP v4's port default).
/// None: the builder binds the key named like the port and the XML loader requires the port;
/// Key: the blackboard key `key` (`{=}`: the port's own name; `{key}`); Value: a private constant
/// holding `value` (a literal, of the port's type).
struct PortDefault {
    enum class Kind : std::uint8_t { None, Key, Value };
    Kind kind = Kind::None;
    std::string key;                 // Kind::Key
    const TypeInfo* type = nullptr;  // Kind::Value: the value's type (must be the port's)
    Value value;                     // Kind::Value: the value
    std::string text;                // Kind::Value: its literal text (filled when the spec is registered)
};

/// The values a parameter accepts (PortSpec::range / one_of): what the builder and the XML loader
/// check a literal against, and what the model export shows designers. Filled by the PortSpec
/// setters; converted to the port's type and checked when the spec is registered. Not checked on
/// values a `{key}` brings at run time (docs/parameters.md, "What is checked when").
struct PortAllowed {
    Value min, max;                  // range(lo, hi): both set (numbers only), bounds included
    std::vector<Value> one_of;       // one_of({...}): the allowed values, in the order given
    std::vector<std::string> texts;  // their literal texts (min and max, or each one_of value): filled at registration
    bool any() const noexcept { return min.type() != nullptr || !one_of.empty(); }
};

/// A port: a named, typed blackboard access of an action or condition. A node using the action binds
/// each port to a key; a port the node leaves out gets its default (`fallback`), or without one the
/// key with the port's own name.
///
/// A port is also the node's **parameter** for designers (docs/parameters.md): it may carry a
/// one-line description, the values it accepts and a required flag, set with the chained setters
/// below and checked once, at build or load time:
///     ebt::input_port<float>("range").describe("how far the guard sees").range(0, 50).default_value(10.f)
struct PortSpec {
    std::string name;
    const TypeInfo* type = nullptr;
    PortDirection direction = PortDirection::InOut;
    PortDefault fallback;
    /// detail::port_hash(name), filled when the spec is registered (Registry, TreeBuilder::action):
    /// what ctx.in<T>("name") compares. Two ports of one spec with the same name or hash are refused.
    std::uint64_t name_hash = 0;
    /// One line for the editor's palette (the text of the model's <input_port>). Not checked by ebt.
    std::string description{};
    /// The values a literal for this port may have (range or one_of; neither: any value of the type).
    PortAllowed allowed{};
    /// Set by required(): every node must give this port a literal or a {key} (no default, and the
    /// builder does not fall back to the key named like the port).
    bool must_be_given = false;

    /// The one-line description editors show next to the parameter.
    PortSpec& describe(std::string text) {
        description = std::move(text);
        return *this;
    }
    /// Literals must lie in [lo, hi] (both included). For number ports only; lo and hi must convert
    /// exactly to the port's type (range(0, 50) suits a float port) and lo <= hi.
    template <class L, class H> PortSpec& range(const L& lo, const H& hi) {
        allowed.min = Value::of(lo);
        allowed.max = Value::of(hi);
        return *this;
    }
    /// Literals must be one of `values` (strings, enums, numbers; each of the port's type or a number
    /// that converts to it exactly): one_of({"patrol", "guard"}), one_of({Stance::Idle, Stance::Alert}).
    template <class T> PortSpec& one_of(std::initializer_list<T> values) {
        allowed.one_of.clear();
        for (const T& v : values) allowed.one_of.push_back(Value::of(v));
        return *this;
    }
    /// Every node must give this port a value (a literal or a {key}); a required port has no default.
    PortSpec& required() {
        must_be_given = true;
        return *this;
    }

    /// Default binding: the key `key`, or without an argument the key named like the port (`{=}`).
    PortSpec& default_key(std::string key = {}) {
        fallback = PortDefault{PortDefault::Kind::Key, key.empty() ? name : std::move(key), nullptr, {}, {}};
        return *this;
    }
    /// Default binding: a private constant holding `value`. T must be the port's type, one with a
    /// literal form (bool, int, unsigned, long, long long, float, double, std::string (a string
    /// literal is one), an enum added with Registry::add_enum, a user type with format/parse); checked
    /// at registration.
    template <class T> PortSpec& default_value(const T& value) {
        Value v = Value::of(value);
        const TypeInfo* type = v.type();
        fallback = PortDefault{PortDefault::Kind::Value, {}, type, std::move(v), {}};
        return *this;
    }
};
template <class T> PortSpec port(std::string name) { return PortSpec{std::move(name), type_of<T>(), PortDirection::InOut, {}}; }
template <class T> PortSpec input_port(std::string name) {
    return PortSpec{std::move(name), type_of<T>(), PortDirection::In, {}};
}
template <class T> PortSpec output_port(std::string name) {
    return PortSpec{std::move(name), type_of<T>(), PortDirection::Out, {}};
}
template <class T> PortSpec inout_port(std::string name) {
    return PortSpec{std::move(name), type_of<T>(), PortDirection::InOut, {}};
}

namespace detail {
/// FNV-1a (64 bits) of a port name: computed at compile time for the literal in ctx.in<T>("range"),
/// and once per port when a spec is registered.
constexpr std::uint64_t port_hash(std::string_view name) noexcept {
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : name) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}
}  // namespace detail

/// A port named in an action or a condition: ctx.in<float>("range"). A string literal is hashed at
/// compile time, so that finding the port costs an integer comparison per port of the spec, with no
/// string look-up; a name known only at run time can be given as PortName(std::string_view).
struct PortName {
    template <std::size_t N>
    consteval PortName(const char (&literal)[N])  // NOLINT(google-explicit-constructor)
        : text(literal, N - 1), hash(detail::port_hash(std::string_view(literal, N - 1))) {}
    explicit constexpr PortName(std::string_view name) : text(name), hash(detail::port_hash(name)) {}
    std::string_view text;
    std::uint64_t hash;
};

namespace detail {
/// The ports of one use of an action or a condition as its context sees them: the keys bound to them
/// and the spec's port declarations, both in the spec's order. Filled by the runtime for each call.
struct NodePorts {
    const KeyId* bindings = nullptr;
    const PortSpec* specs = nullptr;
    std::size_t count = 0;

    /// The key bound to the port whose name hashes to `name_hash` (PortName::hash), or kNoKey.
    KeyId find(std::uint64_t name_hash) const noexcept {
        for (std::size_t i = 0; i < count; ++i)
            if (specs[i].name_hash == name_hash) return bindings[i];
        return kNoKey;
    }
    /// The key bound to port `i`; UsageError naming `owner` ("action", "condition") when there is none.
    KeyId at(std::size_t i, const char* owner) const;
    /// "its ports: 'range' (float), 'target' (int)" or "it has no ports", for error messages.
    std::string describe() const;
};
}  // namespace detail

/// What an action's callables see. Valid only during the call.
class ActionContext {
public:
    Agent& agent() const noexcept { return *agent_; }
    /// The agent's handle in its World (to find it again in a later frame). Throws UsageError for an
    /// agent that does not belong to a World.
    AgentHandle agent_handle() const;
    /// The agent's user pointer (SpawnOptions::user / AgentOptions::user) as a T. Throws UsageError,
    /// naming both types, when the agent has none or holds another type.
    template <class T> T& user() const { return *static_cast<T*>(user_object(detail::user_type_id<T>(), "ActionContext")); }
    Blackboard& blackboard() const noexcept;
    TimePoint now() const noexcept;
    /// The time this tick advanced the agent's clock by: the frame's dt for an agent ticked every
    /// frame; for an agent of a World that slept or skipped frames (LOD), the time since its last
    /// tick. 0 outside a tick (an action aborted by Agent::abort() or a despawn between frames).
    Duration dt() const noexcept { return dt_; }
    std::uint64_t tick() const noexcept;
    NodeIndex node() const noexcept { return node_; }

    /// Reads the key bound to port `i` (ports in the order the spec declared them).
    template <class T> const T& in(std::size_t i) const { return blackboard().get(Key<T>{ports_->at(i, "action")}); }
    /// Writes the key bound to port `i`; returns true when the value changed.
    template <class T> bool out(std::size_t i, const T& value) const {
        return blackboard().set(Key<T>{ports_->at(i, "action")}, value);
    }
    /// Reads the key bound to the port called `port`. An unknown name throws UsageError listing the
    /// action's ports (inside a tick: the node fails, reported as an Error event).
    template <class T> const T& in(PortName port) const { return blackboard().get(Key<T>{named(port)}); }
    /// Writes the key bound to the port called `port`; returns true when the value changed.
    template <class T> bool out(PortName port, const T& value) const { return blackboard().set(Key<T>{named(port)}, value); }

    /// This node's per-agent user memory (ActionSpec::memory_bytes bytes, zeroed when the run starts).
    template <class T> T& memory() const {
        static_assert(std::is_trivially_copyable_v<T>);
        return *static_cast<T*>(user_memory(sizeof(T), alignof(T)));
    }

    /// Suspends this run: the action gets no more updates until game code calls Agent::resume with the
    /// returned handle. Call from onInitialize or update; update must then return Running.
    ResumeHandle suspend() const;

private:
    friend class Agent;
    friend struct detail::Runtime;
    KeyId named(const PortName& port) const {
        const KeyId key = ports_->find(port.hash);
        if (key == kNoKey) [[unlikely]] no_such_port(port);
        return key;
    }
    [[noreturn]] void no_such_port(const PortName& port) const;
    /// memory<T>()'s out-of-line half: this node's user memory in the agent's state block, after
    /// checking that `size` bytes at `align` fit the action's ActionSpec::memory_bytes (UsageError).
    void* user_memory(std::size_t size, std::size_t align) const;
    void* user_object(std::uint16_t type, const char* who) const;

    // Four members, so that the engine builds a context with four stores for every call of an
    // action's functions (a quiet World tick builds one per agent-frame). The user memory's place and
    // size are found from the agent and the node when memory<T>() asks (user_memory).
    Agent* agent_ = nullptr;
    const detail::NodePorts* ports_ = nullptr;  // the node's ports, in its tree's compiled data
    Duration dt_{0};
    NodeIndex node_ = kNoNode;
};

/// What a condition sees: read-only access to the agent's blackboard through its ports.
class ConditionContext {
public:
    const Blackboard& blackboard() const noexcept { return *blackboard_; }
    TimePoint now() const noexcept { return now_; }
    template <class T> const T& in(std::size_t i) const { return blackboard_->get(Key<T>{ports_.at(i, "condition")}); }
    /// Reads the key bound to the port called `port` (see ActionContext::in). An unknown name throws
    /// UsageError; inside a tick the condition counts as false and the error is reported.
    template <class T> const T& in(PortName port) const { return blackboard_->get(Key<T>{named(port)}); }
    /// The agent's user pointer as a T (see ActionContext::user). A condition that reads its NPC
    /// rather than only its ports reads the world: give it a ConditionSpec::recheck_interval.
    template <class T> const T& user() const {
        return *static_cast<const T*>(user_object(detail::user_type_id<T>()));
    }

private:
    friend class Agent;
    friend struct detail::Runtime;
    friend struct detail::EngineAccess;  // port_value(): a recorder stores the values a condition read
    KeyId named(const PortName& port) const {
        const KeyId key = ports_.find(port.hash);
        if (key == kNoKey) [[unlikely]] no_such_port(port);
        return key;
    }
    [[noreturn]] void no_such_port(const PortName& port) const;
    const void* user_object(std::uint16_t type) const;

    const Agent* agent_ = nullptr;
    const Blackboard* blackboard_ = nullptr;
    TimePoint now_ = 0;
    detail::NodePorts ports_;
};

/// The specs below are meant to be written with designated initializers naming only what is used
/// (`ActionSpec{.update = ...}`): every optional member has a default member initializer, so that
/// leaving it out draws no -Wmissing-field-initializers warning from -Wextra.
struct ActionSpec {
    std::function<void(ActionContext&)> on_initialize = {};     // optional
    std::function<Status(ActionContext&)> update;               // required: Running, Success or Failure
    std::function<void(ActionContext&, Status)> on_terminate = {};  // optional; Success, Failure or Aborted
    std::vector<PortSpec> ports = {};
    std::size_t memory_bytes = 0;  // per-agent user memory, at most 64 bytes
};

struct ConditionSpec {
    std::function<bool(const ConditionContext&)> evaluate;  // required, no side effects
    std::vector<PortSpec> ports = {};
    /// Set for conditions that read the world rather than only their ports. In event mode a guard
    /// containing such a condition is re-checked at least every `recheck_interval` while it is live
    /// (and whenever one of its keys changes); polling re-checks every live guard every tick anyway.
    /// Trees using such conditions are outside the polling/event equivalence property.
    std::optional<Duration> recheck_interval = {};
};

/// A latent action: it suspends itself when it starts and is finished by game code (a movement system,
/// a path finder, an animation) through the ResumeHandle it is given, with World::resume or
/// Agent::resume. It has no update: a suspended action gets none.
struct LatentActionSpec {
    /// Required: called when the action starts (onInitialize), already suspended, with the handle to
    /// resume it by. It may resume at once: the action then ends on the agent's next tick (the walk
    /// has passed it), without an update.
    std::function<void(ActionContext&, const ResumeHandle&)> start;
    /// Optional: called when the run ends (Success or Failure after a resume, Aborted when a guard,
    /// an abort or a despawn cut it: tell the system doing the work to stop).
    std::function<void(ActionContext&, Status)> on_terminate = {};
    std::vector<PortSpec> ports = {};
    std::size_t memory_bytes = 0;
};

namespace detail {
/// Checks the defaults of `ports` against their types and directions (a value default of another
/// type, or without a literal form, or on an action's output port; an empty default key) and fills
/// each value default's text; refuses two ports with the same name or name hash, and fills each
/// port's name_hash. Checks each port's parameter rules (range, one_of, required: see PortSpec),
/// converting the allowed values to the port's type and filling their texts, and a value default
/// against them. Throws BuildError naming `what` ("action 'X'") and the port.
void check_port_defaults(const std::string& what, std::vector<PortSpec>& ports, bool is_condition);

/// Why `value` (of port `p`'s type) is not allowed for `p`, or "" when it is (or `p` allows any):
/// "60 is outside the allowed range 0 to 50", "'flee' is not one of the allowed values: patrol, guard".
std::string port_value_problem(const PortSpec& p, const void* value);

/// The values `p` allows as a message says them, "0 to 50" or "patrol, guard"; "" when any value.
std::string port_allowed_text(const PortSpec& p);
}  // namespace detail

/// Names to specs. Not thread-safe while being filled; read-only use afterwards is.
class Registry {
public:
    Registry& add_action(std::string name, ActionSpec spec);
    Registry& add_condition(std::string name, ConditionSpec spec);

    /// Shorthand: an action that is only an update function.
    Registry& add_action(std::string name, std::function<Status(ActionContext&)> update,
                         std::vector<PortSpec> ports = {});
    /// Shorthand: a latent action (see LatentActionSpec): `start` receives the handle of the run's
    /// suspension; the action has no update.
    Registry& add_latent_action(std::string name, LatentActionSpec spec);
    Registry& add_latent_action(std::string name, std::function<void(ActionContext&, const ResumeHandle&)> start,
                                std::vector<PortSpec> ports = {});
    /// Shorthand: a condition over ports.
    Registry& add_condition(std::string name, std::function<bool(const ConditionContext&)> evaluate,
                            std::vector<PortSpec> ports = {});

    /// Names the values of enum E for XML literals and save(): port values and defaults, blackboard
    /// initial values and `stance == Alert` in expressions. `type_name` is what a file's
    /// <Blackboard> and <TreeNodesModel> call the type. A name is an identifier; a value's first name
    /// is the one save() writes. Names belong to the C++ type, process-wide: every Registry may add
    /// the same enum with the same names; other names for it, or a type name already taken, throw
    /// BuildError. Call it at start-up, before loading (not concurrently with loading).
    ///     registry.add_enum<Stance>("Stance", {{"Idle", Stance::Idle}, {"Alert", Stance::Alert}});
    template <class E>
    Registry& add_enum(std::string type_name, std::initializer_list<std::pair<std::string_view, E>> values) {
        static_assert(std::is_enum_v<E>, "add_enum names the values of an enum type");
        auto form = std::make_unique<TextForm>();
        for (const auto& [name, value] : values) form->names.emplace_back(std::string(name), static_cast<long long>(value));
        form->enum_value = &detail::EnumOf<E>::value;
        form->set_enum = &detail::EnumOf<E>::set;
        detail::name_value_type(type_of<E>(), type_name, std::move(form));
        return *this;
    }
    /// Gives a user type with a text form (BlackboardValue<T> with format and parse) the name XML
    /// files call it by (<Blackboard> entries, <TreeNodesModel>). Same rules as add_enum.
    template <class T> Registry& add_type(std::string type_name) {
        static_assert(detail::HasValueText<T>, "add_type needs ebt::BlackboardValue<T> with format and parse");
        detail::name_value_type(type_of<T>(), type_name, nullptr);
        return *this;
    }

    const ActionSpec* find_action(std::string_view name) const;
    const ConditionSpec* find_condition(std::string_view name) const;
    std::vector<std::string> action_names() const;
    std::vector<std::string> condition_names() const;

private:
    std::map<std::string, ActionSpec, std::less<>> actions_;
    std::map<std::string, ConditionSpec, std::less<>> conditions_;
};

}  // namespace ebt
