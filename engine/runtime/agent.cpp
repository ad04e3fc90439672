// Agent: the public face of one agent's run; delegates to Runtime for everything that runs nodes.
#include "runtime/resume_run.hpp"  // Runtime::resume_run, inline in Agent::resume

#include <ebt/limits.hpp>
#include <ebt/shared_blackboard.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace ebt {

using detail::Runtime;

using detail::TickScope;

namespace {
std::atomic<std::uint64_t> next_serial{1};
}  // namespace

Duration duration_from_seconds(double seconds, const char* who) {
    const auto show = [](double v) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", v);
        return std::string(text);
    };
    if (std::isnan(seconds)) throw UsageError(std::string(who) + ": dt is NaN");
    if (seconds < 0) throw UsageError(std::string(who) + ": negative dt (" + show(seconds) + " s)");
    // Compared in seconds before converting, so that the conversion itself cannot overflow.
    constexpr double kLimitSeconds = static_cast<double>(limits::kMaxClockMicroseconds) / 1e6;
    if (!(seconds < kLimitSeconds))
        throw UsageError(std::string(who) + ": dt of " + show(seconds) +
                         " s is past the clock's range (2^61 us, about 73,000 years)");
    return Duration(std::llround(seconds * 1e6));
}

void check_initial_values(const Tree& tree, const std::vector<InitialValue>& values, std::string_view who) {
    const BlackboardSchema& schema = tree.schema();
    const std::string tree_name = "tree '" + tree.name() + "'";
    for (std::size_t i = 0; i < values.size(); ++i) {
        const InitialValue& v = values[i];
        const KeyId id = schema.find(v.key);
        if (id == kNoKey)
            throw UsageError(std::string(who) + ": " + tree_name + " has no blackboard key '" + v.key + "' (initial values)");
        const KeyInfo& info = schema.info(id);
        if (info.scope != kLocalScope)
            throw UsageError(std::string(who) + ": key '" + v.key + "' of " + tree_name + " is a key of the shared scope '" +
                             schema.scopes()[info.scope] + "': give its value to the shared blackboard, not to the agent");
        if (info.type != v.type)
            throw UsageError(std::string(who) + ": key '" + v.key + "' of " + tree_name + " is " + info.type->name +
                             ", but its initial value is " + v.type->name);
        for (std::size_t j = 0; j < i; ++j)
            if (values[j].key == v.key)
                throw UsageError(std::string(who) + ": key '" + v.key + "' is given two initial values");
    }
}

Agent::Agent(Tree tree, AgentOptions options) : Agent(std::move(tree), std::move(options), nullptr, 0) {}

Agent::Agent(Tree tree, AgentOptions options, detail::HostedBlock hosted)
    : Agent(std::move(tree), std::move(options), hosted.host_, hosted.slot_) {}

Agent::Agent(Tree tree, AgentOptions options, detail::AgentHost* block_host, std::uint32_t slot)
    : listener_(options.listener),
      mode_(options.mode),
      tree_(std::move(tree)),
      restart_on_end_(options.restart_on_end),
      user_type_(options.user.type()),
      user_(options.user.get()),
      seed_(options.seed) {
    if (!tree_) throw UsageError("Agent: the tree is empty (build it with TreeBuilder::end())");
    check_initial_values(tree_, options.blackboard, "Agent");
    const auto& data = detail::EngineAccess::tree_data(tree_);
    if (block_host) {
        // A World's agent: its block is the World's, at the place of its slot. The host is known from
        // here on (the World sets it again when the agent joins; a wake before then is ignored).
        block_.reset(static_cast<std::max_align_t*>(block_host->allocate_state_block(slot, data.layout.block_bytes)));
        block_from_host_ = true;
        host_ = block_host;
        host_slot_ = slot;
    } else {
        block_.reset(new std::max_align_t[data.layout.block_bytes / sizeof(std::max_align_t) + 1]);
    }
    // From here a throw must give the block back the way it came (a host's block is not delete[]d).
    try {
        init_block(options);
    } catch (...) {
        free_block();
        throw;
    }
}

void Agent::init_block(const AgentOptions& options) {
    const auto& data = detail::EngineAccess::tree_data(tree_);
    serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
    auto* bytes = reinterpret_cast<std::byte*>(block_.get());
    std::memset(bytes, 0, data.layout.block_bytes);  // every status Invalid, every flag and counter 0
    blackboard_.schema_ = &data.schema;
    blackboard_.values_ = bytes + data.layout.blackboard_offset;
    blackboard_.agent_ = this;
    blackboard_.bus_ = options.bus;
    // The initial values: the schema's bytes, then its non-trivial values constructed in place (none
    // for most trees). If a copy throws, nothing else was made yet (the constructor frees the block).
    data.schema.construct_values(blackboard_.values_);
    for (const InitialValue& v : options.blackboard) {  // (checked above) no change, no wake: nothing has run
        const KeyInfo& info = data.schema.info(data.schema.find(v.key));
        try {
            detail::assign_value(info.type, blackboard_.values_ + info.offset, v.value.data());
        } catch (...) {
            data.schema.destroy_values(blackboard_.values_);
            throw;
        }
    }
    next_deadline_ = detail::kNever;
    if (data.recheck_interval) {
        auto& recheck = *reinterpret_cast<TimePoint*>(bytes + data.layout.recheck_offset);
        recheck = data.recheck_interval;
        next_deadline_ = recheck;
    }
    Runtime rt(*this);
    rt.queue_reset();
    rt.set(0, detail::kStartPending);
    if (mode_ == Mode::Event) rt.enqueue(0);
    rt.check_invariants("the agent's creation");
}

void Agent::free_block() noexcept {
    if (block_from_host_) {
        host_->release_state_block(host_slot_, detail::EngineAccess::tree_data(tree_).layout.block_bytes, block_.release());
        block_from_host_ = false;
    } else {
        block_.reset();
    }
}

void Agent::move_block_to(detail::HostedBlock hosted) {
    if (!block_ || block_from_host_) return;
    const auto& data = detail::EngineAccess::tree_data(tree_);
    const std::size_t bytes = data.layout.block_bytes;
    auto* fresh = static_cast<std::byte*>(hosted.host_->allocate_state_block(hosted.slot_, bytes));
    const auto* old = reinterpret_cast<const std::byte*>(block_.get());
    std::memcpy(fresh, old, bytes);  // statuses, flags, queue, deadlines, node memory: plain bytes
    try {
        data.schema.copy_values(fresh + data.layout.blackboard_offset, blackboard_.values_);
    } catch (...) {
        hosted.host_->release_state_block(hosted.slot_, bytes, fresh);
        throw;
    }
    data.schema.destroy_values(blackboard_.values_);
    block_.reset(reinterpret_cast<std::max_align_t*>(fresh));  // delete[]s the heap block
    block_from_host_ = true;
    host_ = hosted.host_;
    host_slot_ = hosted.slot_;
    blackboard_.values_ = fresh + data.layout.blackboard_offset;
}

Agent::~Agent() {
    if (!block_) return;
    if (!in_tick_) {
        // Running actions are told they were aborted, so that they can release what they hold.
        listener_ = nullptr;
        restart_on_end_ = false;
        TickScope scope(in_tick_);
        Runtime rt(*this);
        rt.aborting = true;
        rt.abort_range(0, static_cast<NodeIndex>(tree_.size()));
    }
    // Then the blackboard's values that are not trivially copyable (strings): none for most trees.
    blackboard_.schema_->destroy_values(blackboard_.values_);
    free_block();
}

Agent::Agent(Agent&& other) noexcept
    : block_(std::move(other.block_)),
      listener_(other.listener_),
      clock_(other.clock_),
      next_deadline_(other.next_deadline_),
      ticks_(other.ticks_),
      walk_pos_(other.walk_pos_),
      queue_head_(other.queue_head_),
      queue_size_(other.queue_size_),
      mode_(other.mode_),
      in_tick_(false),
      abort_requested_(other.abort_requested_),
      stopped_(other.stopped_),
      stats_(other.stats_),
      tree_(std::move(other.tree_)),
      blackboard_(other.blackboard_),
      host_(other.host_),
      host_slot_(other.host_slot_),
      restart_on_end_(other.restart_on_end_),
      block_from_host_(other.block_from_host_),
      user_type_(other.user_type_),
      user_(other.user_),
      seed_(other.seed_),
      serial_(other.serial_) {
    other.block_from_host_ = false;  // (other.block_ is null now)
    blackboard_.agent_ = this;
    other.blackboard_ = Blackboard();  // the moved-from agent's blackboard refuses every access
}

Agent& Agent::operator=(Agent&& other) noexcept {
    if (this == &other) return *this;
    this->~Agent();
    new (this) Agent(std::move(other));
    return *this;
}

Status Agent::tick(Duration dt) {
    if (host_) throw UsageError("Agent::tick() on an agent that belongs to a World: the World steps it (World::step)");
    return tick_numbered(ticks_, dt);
}

Status Agent::tick_numbered(std::uint64_t tick, Duration dt, FrameMetrics* frame) {
    // A tick its host asked for (a World's step passes its FrameMetrics) and that is refused below:
    // the host takes the time it handed out back first (AgentHost::on_tick_refused).
    if (frame && host_ &&
        (in_tick_ || tick < ticks_ || dt.count() < 0 || !block_ || dt.count() > limits::kMaxClockMicroseconds - clock_))
        host_->on_tick_refused(host_slot_, dt.count());
    if (in_tick_) throw UsageError("Agent::tick() called from inside a tick of the same agent");
    if (tick < ticks_) throw UsageError("Agent::tick_numbered(): tick numbers must not go backwards");
    if (dt.count() < 0) throw UsageError("Agent::tick() with a negative dt");
    if (!block_) throw UsageError("Agent::tick() on a moved-from agent");
    if (dt.count() > limits::kMaxClockMicroseconds - clock_)
        throw UsageError("Agent::tick(): a dt of " + std::to_string(dt.count()) +
                         " us would move the agent clock past its limit (2^61 us, about 73,000 years)");
    return Runtime::checked_tick(*this, tick, dt, frame);
}

Status detail::Runtime::checked_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics* frame) {
    TickScope scope(agent.in_tick_);
    agent.ticks_ = tick;
    agent.clock_ += dt.count();
    agent.walk_pos_ = -1;
    Runtime rt(agent);
    rt.dt = dt;
    rt.frame = frame;
    if (!agent.stopped_) {
        if (agent.mode_ == Mode::Polling) rt.poll_tick();
        else rt.event_tick();
    }
    return rt.finish_tick();
}

void detail::Runtime::finish_stopped_tick() {
    abort_all();  // an abort() called during the tick, carried out where user code returned
    if (a.mode_ == Mode::Event) {
        // Put the end-of-frame marker back at the end: everything queued is for the next tick.
        for (std::uint16_t i = 0; i < a.queue_size_; ++i)
            if (queue_at(i) == detail::kQueueMarker) {
                queue_remove_at(i);
                break;
            }
        queue_insert(a.queue_size_, detail::kQueueMarker);
    }
}

// The rest of a tick that world_tick's lean path began (runtime/world_tick.hpp), when the update did
// anything but return Running with nothing else changed: on through the general path from the
// update's return (run_update's end, single_entry_tick's end, event_tick's loop, tick_numbered's end).
// Out of line, so that the lean path keeps few values across the update's call. world_tick's
// TickScope ends the tick (in_tick_) when this returns.
namespace {
/// What the update of a quiet World tick threw, from world_tick's catch (Runtime::keep_world_update_error)
/// to Runtime::finish_world_update, which the lean path calls next on the same thread.
std::exception_ptr& world_update_error() noexcept {
    thread_local std::exception_ptr error;
    return error;
}
}  // namespace

[[gnu::noinline]] void detail::Runtime::keep_world_update_error() noexcept { world_update_error() = std::current_exception(); }

[[gnu::noinline]] void detail::Runtime::finish_world_update(Agent& agent, NodeIndex n, std::uint16_t head, Status s, Duration dt,
                                                           FrameMetrics& frame) {
    const std::exception_ptr error = std::exchange(world_update_error(), nullptr);  // (null: the update returned)
    ++frame.events_handled;  // the pop of n, which world_tick leaves to its caller when the tick is quiet
    Runtime rt(agent);
    rt.dt = dt;
    rt.frame = &frame;
    bool ok = true;
    if (error) ok = rt.contained(n, [&] { std::rethrow_exception(error); });  // its Error event, as contained() reports it
    if (!rt.single_update_done(n, head, rt.finish_update(n, ok, s))) rt.event_loop();
    rt.finish_tick();
}

void Agent::abort() {
    if (!block_) throw UsageError("Agent::abort() on a moved-from agent");
    if (host_) host_->on_agent_abort(host_slot_);
    if (in_tick_) {
        abort_requested_ = true;  // takes effect when the calling user function returns
        return;
    }
    {
        TickScope scope(in_tick_);
        Runtime rt(*this);
        rt.abort_all();
    }
    Runtime(*this).check_invariants("Agent::abort()");
    if (host_) host_->on_agent_wake(host_slot_);
}

bool Agent::resume(const ResumeHandle& handle, Status status) {
    if (status != Status::Success && status != Status::Failure)
        throw UsageError(std::string("Agent::resume() needs Success or Failure, got ") + to_string(status));
    if (!block_ || handle.agent_serial != serial_) return false;  // not a handle of this agent
    Runtime rt(*this);
    bool wake = false;
    const bool accepted = rt.resume_run(handle, status, wake);
    if (wake && host_) host_->on_agent_wake(host_slot_);
    if (accepted && !in_tick_) rt.check_invariants("Agent::resume()");
    if (host_) host_->on_agent_resume(host_slot_, handle, status, accepted);
    return accepted;
}

void Agent::restart() {
    if (!block_ || !stopped_) return;
    stopped_ = false;
    Runtime rt(*this);
    rt.set(0, detail::kStartPending);
    if (mode_ == Mode::Event) rt.enqueue(0);
    rt.check_invariants("Agent::restart()");
    if (host_) {
        host_->on_agent_wake(host_slot_);
        host_->on_agent_restart(host_slot_);
    }
}

Status Agent::status() const { return status(0); }

Status Agent::status(NodeIndex node) const {
    if (!block_) throw UsageError("Agent::status() on a moved-from agent");
    if (node >= tree_.size()) throw UsageError("Agent::status(): no node " + std::to_string(node));
    const auto* bytes = reinterpret_cast<const std::byte*>(block_.get());
    return reinterpret_cast<const Status*>(bytes + detail::EngineAccess::tree_data(tree_).layout.status_offset)[node];
}

Status Agent::status(NodeRef node) const {
    if (!block_) throw UsageError("Agent::status() on a moved-from agent");
    if (!node) throw UsageError("Agent::status(): the NodeRef refers to no node");
    if (node.tree_tag() != tree_.schema().tag())
        throw UsageError("Agent::status(): node " + std::to_string(node.index()) + " was found in another tree than '" +
                         tree_.name() + "'");
    return status(node.index());
}

std::size_t Agent::memory_bytes() const noexcept {
    return block_ ? sizeof(Agent) + detail::EngineAccess::tree_data(tree_).layout.block_bytes : sizeof(Agent);
}

void Agent::on_blackboard_change(KeyId key) {
    if (mode_ != Mode::Event) return;  // polling re-evaluates every live guard anyway
    Runtime rt(*this);
    rt.on_key_changed(key);
    if (!in_tick_) rt.check_invariants("a blackboard write");
}

// ---- shared scopes ------------------------------------------------------------------------------------

namespace {
SharedBlackboard** scope_table(const detail::TreeData& t, std::byte* block) {
    return reinterpret_cast<SharedBlackboard**>(block + t.layout.shared_offset);
}
KeyId* shared_ids(const detail::TreeData& t, std::byte* block) {
    return reinterpret_cast<KeyId*>(block + t.layout.shared_offset + 8 * t.schema.scopes().size());
}
}  // namespace

void Agent::bind(std::string_view scope, SharedBlackboard& shared) {
    if (!block_) throw UsageError("Agent::bind() on a moved-from agent");
    const auto& t = detail::EngineAccess::tree_data(tree_);
    const auto& scopes = t.schema.scopes();
    const auto it = std::find(scopes.begin(), scopes.end(), scope);
    if (it == scopes.end())
        throw UsageError("tree '" + t.name + "' has no shared scope '" + std::string(scope) + "'");
    const auto scope_index = static_cast<std::uint8_t>(it - scopes.begin());
    auto* bytes = reinterpret_cast<std::byte*>(block_.get());
    KeyId* ids = shared_ids(t, bytes);
    // Checked first, so that a refused binding declares nothing; then the keys `shared` lacks are
    // declared with the tree's type and initial value.
    detail::bind_shared_keys(tree_, scope_index, shared, "", false);
    detail::bind_shared_keys(tree_, scope_index, shared, "", true);
    scope_table(t, bytes)[scope_index] = &shared;
    for (KeyId k = 0; k < t.schema.size(); ++k) {
        const KeyInfo& info = t.schema.info(k);
        if (info.scope != scope_index) continue;
        ids[k] = shared.schema().find(info.shared_name);
        detail::assign_value(info.type, blackboard_.values_ + info.offset, shared.published(ids[k]));
    }
}

SharedBlackboard* Agent::bound(std::string_view scope) const {
    if (!block_) return nullptr;
    const auto& t = detail::EngineAccess::tree_data(tree_);
    const auto& scopes = t.schema.scopes();
    const auto it = std::find(scopes.begin(), scopes.end(), scope);
    if (it == scopes.end()) return nullptr;
    return scope_table(t, reinterpret_cast<std::byte*>(block_.get()))[it - scopes.begin()];
}

KeyId Agent::shared_key_id(KeyId key) const {
    return shared_ids(detail::EngineAccess::tree_data(tree_), reinterpret_cast<std::byte*>(block_.get()))[key];
}

void Blackboard::set_shared(KeyId id, const void* value) {
    const KeyInfo& info = schema_->info(id);
    SharedBlackboard* shared = agent_ ? agent_->bound(agent_->tree().schema().scopes()[info.scope]) : nullptr;
    if (!shared)
        throw UsageError("key '" + info.name + "' belongs to shared scope '" + schema_->scopes()[info.scope] +
                         "', which is not bound (spawn with SpawnOptions::shared or call Agent::bind)");
    shared->set_raw(agent_->shared_key_id(id), value);
}

bool Blackboard::mirror(KeyId id, const void* value) {
    const KeyInfo& info = schema().info(id);
    std::byte* slot = values_ + info.offset;
    if (detail::values_equal(info.type, slot, value)) return false;
    detail::assign_value(info.type, slot, value);
    changed(id);
    return true;
}

// ---- contexts ---------------------------------------------------------------------------------------

Blackboard& ActionContext::blackboard() const noexcept { return agent_->blackboard_; }
TimePoint ActionContext::now() const noexcept { return agent_->clock_; }
std::uint64_t ActionContext::tick() const noexcept { return agent_->ticks_; }

// ---- user pointers --------------------------------------------------------------------------------

namespace {
std::mutex user_types_mutex;
std::vector<const char*>& user_type_names() {
    static std::vector<const char*> names{"nothing"};  // id 0: no user pointer
    return names;
}
}  // namespace

std::uint16_t detail::register_user_type(const char* name) {
    std::lock_guard<std::mutex> lock(user_types_mutex);
    auto& names = user_type_names();
    if (names.size() > 0xFFFF) throw UsageError("UserPointer: more than 65,535 user pointer types");
    names.push_back(name);
    return static_cast<std::uint16_t>(names.size() - 1);
}

const char* detail::user_type_name(std::uint16_t id) noexcept {
    std::lock_guard<std::mutex> lock(user_types_mutex);
    const auto& names = user_type_names();
    return id < names.size() ? names[id] : "?";
}

void* Agent::user_object(std::uint16_t type, const char* who) const {
    if (user_type_ == type && user_) return user_;
    const std::string wanted = detail::user_type_name(type);
    if (!user_)
        throw UsageError(std::string(who) + "::user<" + wanted + ">(): the agent has no user pointer (give one with " +
                         "SpawnOptions::user or AgentOptions::user)");
    throw UsageError(std::string(who) + "::user<" + wanted + ">(): the agent's user pointer is a " +
                     detail::user_type_name(user_type_) + "*, not a " + wanted + "*");
}

void* ActionContext::user_object(std::uint16_t type, const char* who) const { return agent_->user_object(type, who); }

const void* ConditionContext::user_object(std::uint16_t type) const { return agent_->user_object(type, "ConditionContext"); }

AgentHandle ActionContext::agent_handle() const {
    if (!agent_->host_)
        throw UsageError("ActionContext::agent_handle(): the agent does not belong to a World (it was not spawned by one)");
    return agent_->host_->handle_of(agent_->host_slot_);
}

std::string detail::NodePorts::describe() const {
    if (count == 0) return "it has no ports";
    std::string s = "its ports: ";
    for (std::size_t i = 0; i < count; ++i) {
        if (i) s += ", ";
        s += "'" + specs[i].name + "' (" + (specs[i].type ? specs[i].type->name : "?") + ")";
    }
    return s;
}

void ActionContext::no_such_port(const PortName& port) const {
    throw UsageError("action '" + agent_->tree().label(node_) + "' has no port '" + std::string(port.text) + "' (" +
                     ports_->describe() + ")");
}

void ConditionContext::no_such_port(const PortName& port) const {
    throw UsageError("condition has no port '" + std::string(port.text) + "' (" + ports_.describe() + ")");
}

KeyId detail::NodePorts::at(std::size_t i, const char* owner) const {
    if (i >= count)
        throw UsageError(std::string(owner) + " port " + std::to_string(i) + " does not exist (the " + owner + " declares " +
                         std::to_string(count) + " ports)");
    return bindings[i];
}

void* ActionContext::user_memory(std::size_t size, std::size_t align) const {
    // The context was made from this agent's tree and block (Runtime::make_action_context), which do
    // not change while one of its action's functions runs.
    const detail::ActionCall& call = detail::EngineAccess::tree_data(agent_->tree_).action_calls[node_];
    if (size > call.memory_size)
        throw UsageError("action memory of " + std::to_string(size) + " bytes requested, but the action declares " +
                         std::to_string(call.memory_size) + " (ActionSpec::memory_bytes)");
    if (align > 16) throw UsageError("action memory type needs more than 16-byte alignment");
    return reinterpret_cast<std::byte*>(agent_->block_.get()) + call.memory_offset;
}

ResumeHandle ActionContext::suspend() const {
    Runtime rt(*agent_);
    if (!agent_->in_tick_ || !rt.running(node_))
        throw UsageError("ActionContext::suspend() called outside the action's onInitialize or update");
    rt.set(node_, detail::kSuspended);
    return rt.suspension_handle(node_);
}

}  // namespace ebt
