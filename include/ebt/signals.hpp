// Subscribing to blackboard changes: the Boost.Signals2 side of ebt.
//
// Include this header where game code or a tool connects to changes: it gives the full ChangeBus
// (AgentOptions::bus, World::bus()), the BlackboardChange its slots receive, and the signal of a
// SharedBlackboard (SharedBlackboard::changes()). The other public headers only name these types,
// so that a source that merely builds trees, spawns agents and writes blackboards does not compile
// Boost.Signals2 (about 86,000 preprocessed lines; docs/architecture.md, "Include cost").
//
// Thread-safety: the signals use dummy_mutex; connect, disconnect and emit on the simulation thread.
#pragma once

#include <ebt/blackboard.hpp>
#include <ebt/shared_blackboard.hpp>

#include <boost/signals2/dummy_mutex.hpp>
#include <boost/signals2/signal.hpp>
#include <boost/signals2/signal_type.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

namespace ebt {

namespace detail {
struct EngineAccess;

/// The Boost.Signals2 combiner of the engine's change signals (ChangeBus, SharedBlackboard): it calls
/// every connected slot even when one throws. A slot is an observer, like a trace listener: its
/// exception is swallowed and counted in `*errors`, so that it can neither stop the slots after it nor
/// break the write or the publish that emitted the change.
struct ContainSlotErrors {
    using result_type = void;
    std::uint64_t* errors = nullptr;
    template <class Iterator> void operator()(Iterator first, Iterator last) const {
        for (; first != last; ++first) {
            try {
                static_cast<void>(*first);  // calls the slot
            } catch (const boost::signals2::expired_slot&) {
                // a slot whose tracked object is gone: Boost disconnected it; not an error
            } catch (...) {
                if (errors) ++*errors;
            }
        }
    }
};
}  // namespace detail

/// What a ChangeBus slot receives. Valid only during the call.
struct BlackboardChange {
    const Blackboard& blackboard;
    KeyId key;
    std::string_view name;
    Agent* agent;  // the agent owning the blackboard (nullptr for a free-standing blackboard)
};

/// One Boost.Signals2 signal carrying blackboard changes of many agents to game code and tools.
/// Share one bus between all agents of a world: the bus, not each agent, pays for the signal.
/// Slots run synchronously inside the write that caused them; a slot may write other keys (a
/// change listener writing another key is defined: see docs/semantics.md, "Re-entrancy").
/// A slot that throws is contained: the other slots still get the change, the write stands, and the
/// exception is counted (slot_errors()). Not copyable or movable (its signal counts into the bus).
/// Owned by whoever creates it (a World owns its bus()); it must outlive the agents using it.
/// Thread-safety: uses dummy_mutex; connect, disconnect and emit on the simulation thread only.
class ChangeBus {
public:
    using Signal = boost::signals2::signal_type<
        void(const BlackboardChange&),
        boost::signals2::keywords::combiner_type<detail::ContainSlotErrors>,
        boost::signals2::keywords::mutex_type<boost::signals2::dummy_mutex>>::type;

    ChangeBus() = default;
    ChangeBus(const ChangeBus&) = delete;
    ChangeBus& operator=(const ChangeBus&) = delete;

    /// The signal itself (to connect with groups, inspect slots, ...). Handing it out counts as a
    /// possible connection: from then on every change asks the signal whether it has slots.
    Signal& changes() noexcept {
        maybe_connected_ = true;
        return signal_;
    }
    /// Convenience: connect a slot. Keep the returned connection (or a scoped_connection) to disconnect.
    template <class F> boost::signals2::connection subscribe(F&& slot) {
        maybe_connected_ = true;
        return signal_.connect(std::forward<F>(slot));
    }

    /// True while a change is being emitted (a slot is running): a World defers freeing agents then,
    /// since the change's blackboard belongs to one of them.
    bool emitting() const noexcept { return emitting_ != 0; }
    /// Exceptions thrown by slots of this bus since it was created (each swallowed).
    std::uint64_t slot_errors() const noexcept { return slot_errors_; }

private:
    friend struct detail::EngineAccess;  // has_slots() and publish(), for Blackboard writes

    /// Whether a change must be emitted. A bus that was never connected to answers with one test;
    /// asking the signal (`empty()`) costs about as much as a whole unwatched write
    /// (docs/benchmarks.md), and every agent of a World has a bus.
    bool has_slots() const { return maybe_connected_ && !signal_.empty(); }
    /// Emits `change` to the connected slots (exceptions from slots are counted, not thrown).
    void publish(const BlackboardChange& change) {
        struct Emitting {
            std::uint32_t& depth;
            explicit Emitting(std::uint32_t& d) : depth(d) { ++depth; }
            ~Emitting() { --depth; }
        } emitting(emitting_);
        signal_(change);
    }

    std::uint64_t slot_errors_ = 0;
    Signal signal_{detail::ContainSlotErrors{&slot_errors_}};
    std::uint32_t emitting_ = 0;    // nesting depth of publish()
    bool maybe_connected_ = false;  // set once subscribe() or changes() was called; never cleared
};

namespace detail {
using SharedBlackboardSignalBase = boost::signals2::signal_type<
    void(const SharedBlackboard&, KeyId),
    boost::signals2::keywords::combiner_type<ContainSlotErrors>,
    boost::signals2::keywords::mutex_type<boost::signals2::dummy_mutex>>::type;
}  // namespace detail

/// The signal of a SharedBlackboard (SharedBlackboard::Signal, returned by changes()): emitted once per
/// changed key by publish(), with the blackboard and the key's id. A class of its own rather than an
/// alias only so that <ebt/shared_blackboard.hpp> can name it without including Boost.
/// Owned by its SharedBlackboard.
class SharedBlackboardSignal : public detail::SharedBlackboardSignalBase {
public:
    /// `errors` counts the exceptions thrown by slots (SharedBlackboard::slot_errors()).
    explicit SharedBlackboardSignal(std::uint64_t* errors)
        : detail::SharedBlackboardSignalBase(detail::ContainSlotErrors{errors}) {}
};

}  // namespace ebt
