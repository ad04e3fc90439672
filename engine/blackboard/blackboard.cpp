// Blackboard schema bookkeeping and change notification.
#include <ebt/agent.hpp>
#include <ebt/blackboard.hpp>

#include <algorithm>

namespace ebt {

namespace {
std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }
}  // namespace

KeyId BlackboardSchema::declare_raw(std::string name, const TypeInfo* type, const void* initial) {
    if (name.empty()) throw BuildError("blackboard key with an empty name");
    if (find(name) != kNoKey) throw BuildError("blackboard key '" + name + "' is declared twice");
    if (keys_.size() >= kNoKey - 1) throw BuildError("too many blackboard keys");
    KeyInfo info;
    info.name = std::move(name);
    info.type = type;
    // Values are packed in declaration order, each at its natural alignment.
    std::size_t used = keys_.empty() ? 0 : keys_.back().offset + keys_.back().type->size;
    info.offset = static_cast<std::uint32_t>(align_up(used, type->align));
    const std::size_t end = info.offset + type->size;
    if (defaults_.size() < end) defaults_.resize(end, std::byte{0});
    max_align_ = std::max(max_align_, type->align);
    if (initial) std::memcpy(defaults_.data() + info.offset, initial, type->size);
    const auto id = static_cast<KeyId>(keys_.size());
    index_.emplace(info.name, id);
    keys_.push_back(std::move(info));
    return id;
}

KeyId BlackboardSchema::declare_shared_raw(const std::string& scope, const std::string& key, const TypeInfo* type,
                                          const void* initial) {
    if (scope.empty() || key.empty()) throw BuildError("a shared key needs a scope and a name");
    auto it = std::find(scopes_.begin(), scopes_.end(), scope);
    if (it == scopes_.end()) {
        if (scopes_.size() >= 16) throw BuildError("too many shared scopes (at most 16)");
        scopes_.push_back(scope);
        it = scopes_.end() - 1;
    }
    const KeyId id = declare_raw(scope + "." + key, type, initial);
    keys_[id].scope = static_cast<std::uint8_t>(it - scopes_.begin());
    keys_[id].shared_name = key;
    ++shared_keys_;
    return id;
}

KeyId BlackboardSchema::find(std::string_view name) const noexcept {
    const auto it = index_.find(name);
    return it == index_.end() ? kNoKey : it->second;
}

KeyId BlackboardSchema::require(std::string_view name, const TypeInfo* type) const {
    const KeyId id = find(name);
    if (id == kNoKey) throw UsageError("blackboard has no key '" + std::string(name) + "'");
    if (keys_[id].type != type)
        throw UsageError("blackboard key '" + std::string(name) + "' is declared as " + keys_[id].type->name +
                         ", not " + type->name);
    return id;
}

void BlackboardSchema::require(KeyId id, const TypeInfo* type) const {
    if (id >= keys_.size()) throw UsageError("blackboard key id " + std::to_string(id) + " is not declared in this schema");
    if (keys_[id].type != type)
        throw UsageError("blackboard key '" + keys_[id].name + "' is declared as " + keys_[id].type->name + ", not " +
                         type->name);
}

void Blackboard::changed(KeyId id) {
    if (agent_) agent_->on_blackboard_change(id);
    if (bus_ && bus_->has_slots()) bus_->publish(BlackboardChange{*this, id, schema_->info(id).name, agent_});
}

}  // namespace ebt
