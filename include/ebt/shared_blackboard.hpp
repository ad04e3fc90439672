// SharedBlackboard: data many agents read (a squad's alarm, the world's time of day), double-buffered.
//
// Writes (from game code, or from agents through a tree's shared keys) go to a pending buffer; the
// readers see the values published at the start of the frame. publish() (which a World calls at the
// start of every step) copies the pending values that differ and emits one change per changed key on
// this blackboard's single Boost.Signals2 signal (changes(); its type is in <ebt/signals.hpp>, which
// subscribers include: this header does not include Boost). A World connects one slot to it, which
// routes each change to the agents whose trees read the key: no connection per agent. Conflicting
// writes in one frame: the last write wins (agents step in slot order, so this is deterministic).
//
// A tree reads a shared key through a key declared with TreeBuilder::shared_key<T>("squad", "alarm"),
// named "squad.alarm" in the tree; spawning binds the scope "squad" to a SharedBlackboard. A key is
// declared once: binding declares the tree's keys the shared blackboard lacks (with the tree's type
// and initial value); a key it has must have the tree's type and the same initial value, or the
// binding is refused with a UsageError naming the key, the tree and both values (docs/world.md).
//
// Keys may be declared at any time except from inside publish(); values written or published before
// a declare are kept.
//
// Ownership: a World owns the shared blackboards it creates (World::create_shared); their addresses
// are stable. Thread-safety: none (dummy_mutex); use on the simulation thread.
#pragma once

#include <ebt/blackboard.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ebt {

class Tree;
class SharedBlackboard;
class SharedBlackboardSignal;  // <ebt/signals.hpp>

namespace detail {
/// Binding a tree's shared scope `scope` (an index into its schema's scopes) to `shared`: checks the
/// keys `shared` has (type, initial value) and, when `declare_missing`, declares those it lacks.
/// Throws UsageError starting with `who` on a mismatch (nothing declared then: check everything
/// first, with declare_missing false).
void bind_shared_keys(const Tree& tree, std::uint8_t scope, SharedBlackboard& shared, const std::string& who, bool declare_missing);
}  // namespace detail

class SharedBlackboard {
public:
    /// A Boost.Signals2 signal of void(const SharedBlackboard&, KeyId); include <ebt/signals.hpp> to use it.
    using Signal = SharedBlackboardSignal;

    explicit SharedBlackboard(std::string name);
    ~SharedBlackboard();
    SharedBlackboard(const SharedBlackboard&) = delete;
    SharedBlackboard& operator=(const SharedBlackboard&) = delete;

    /// Declares a key with its initial (published and pending) value. Declaring after values were
    /// written or published keeps them (the keys declared before keep their places). Throws
    /// BuildError on a duplicate, and UsageError when called from inside this blackboard's publish().
    template <class T> SharedBlackboard& declare(std::string key, const T& initial = T{}) {
        declare_raw(std::move(key), type_of<T>(), &initial);
        return *this;
    }
    void declare_raw(std::string key, const TypeInfo* type, const void* initial);

    /// The published value (what agents' guards see this frame).
    template <class T> const T& get(std::string_view key) const {
        return *static_cast<const T*>(published(schema_.require(key, type_of<T>())));
    }
    /// The value that will be published next (the last write of this frame, or the published one).
    template <class T> const T& pending(std::string_view key) const {
        return *static_cast<const T*>(pending_value(schema_.require(key, type_of<T>())));
    }
    /// Writes the pending value; agents see it after the next publish(). A string literal, a char
    /// pointer or a std::string_view is written as a std::string.
    template <class T> void set(std::string_view key, const T& value) {
        const detail::stored_t<T>& stored = value;
        set_raw(schema_.require(key, type_of<detail::stored_t<T>>()), &stored);
    }
    void set_raw(KeyId id, const void* value);

    /// Publishes pending writes that changed a value; emits `changes()` once per changed key, in key
    /// order. Returns how many keys changed. A slot that throws is contained (counted in
    /// slot_errors()): the other slots and the other keys are still published. A write made by a slot
    /// is published in this publish when its key comes later in key order, otherwise in the next one.
    /// Throws UsageError when called from inside its own publish (from one of its slots).
    std::size_t publish();
    /// Exceptions thrown by slots of changes() since creation (each swallowed).
    std::uint64_t slot_errors() const noexcept { return slot_errors_; }

    const std::string& name() const noexcept { return name_; }
    const BlackboardSchema& schema() const noexcept { return schema_; }
    /// The published value of key `id` (a value of its type).
    const void* published(KeyId id) const {
        return schema_.info(id).type->ops ? boxed_published_[id].data() : static_cast<const void*>(published_.data() + schema_.info(id).offset);
    }
    /// The pending value of key `id`.
    const void* pending_value(KeyId id) const {
        return schema_.info(id).type->ops ? boxed_pending_[id].data() : static_cast<const void*>(pending_.data() + schema_.info(id).offset);
    }
    /// Feeds the published values to `h` (World::state_hash): their bytes when every key is trivially
    /// copyable, otherwise key by key with the content hash of the others (BlackboardSchema::hash_values).
    void hash_published(detail::Fnv1a& h) const;
    /// The signal emitted once per changed key by publish() (include <ebt/signals.hpp> to connect).
    Signal& changes() noexcept { return *signal_; }

private:
    std::string name_;
    BlackboardSchema schema_;
    // Trivially copyable values in two byte buffers laid out by the schema; a non-trivial value (a
    // std::string) as a Value of its own per buffer, at its key's id (empty for the other keys), so
    // that growing the buffers when a key is declared never moves it byte by byte.
    std::vector<std::byte> published_;
    std::vector<std::byte> pending_;
    std::vector<Value> boxed_published_;
    std::vector<Value> boxed_pending_;
    std::vector<std::uint8_t> written_;  // per key: written since the last publish
    bool any_written_ = false;
    bool publishing_ = false;  // inside publish(): declare() and publish() are refused
    std::uint64_t slot_errors_ = 0;
    std::unique_ptr<Signal> signal_;  // counts into slot_errors_; held by pointer so that this header needs no Boost
    // Owned by a World: its list of the shared blackboards written since they last published, to
    // which the first write after a publish adds publish_index_ (World::step publishes only those;
    // set by detail::EngineAccess::attach_publish_queue).
    friend struct detail::EngineAccess;
    std::vector<std::uint32_t>* publish_queue_ = nullptr;
    std::uint32_t publish_index_ = 0;
};

}  // namespace ebt
