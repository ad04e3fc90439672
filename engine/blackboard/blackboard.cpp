// Blackboard schema bookkeeping and change notification.
#include <ebt/agent.hpp>
#include <ebt/blackboard.hpp>
#include <ebt/detail/engine_access.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/signals.hpp>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace ebt {

namespace {
std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

/// The sealed (tree) schemas alive, by tag: lets the error for a key of another tree name the key and
/// that tree. Touched when a tree is built or destroyed and on that error, never on the tick path.
/// Never destroyed (trees in static storage may outlive any static object).
struct SealedSchemas {
    std::mutex mutex;
    std::unordered_map<std::uint32_t, const BlackboardSchema*> by_tag;
    std::uint32_t next = 1;
};
SealedSchemas& sealed_schemas() {
    static auto* registry = new SealedSchemas;
    return *registry;
}
void unseal(std::uint32_t tag) {
    if (tag == 0) return;
    SealedSchemas& reg = sealed_schemas();
    const std::lock_guard lock(reg.mutex);
    reg.by_tag.erase(tag);
}
}  // namespace

BlackboardSchema::Seal& BlackboardSchema::Seal::operator=(const Seal&) noexcept {
    unseal(tag);
    tag = 0;
    return *this;
}
BlackboardSchema::Seal::~Seal() { unseal(tag); }

void BlackboardSchema::seal(std::string owner) {
    unseal(seal_.tag);
    owner_ = std::move(owner);
    SealedSchemas& reg = sealed_schemas();
    const std::lock_guard lock(reg.mutex);
    // A tag unique among live schemas (skipping 0 and, after 2^32 trees, tags still in use).
    while (reg.next == 0 || reg.by_tag.count(reg.next)) ++reg.next;
    seal_.tag = reg.next++;
    reg.by_tag.emplace(seal_.tag, this);
}

void BlackboardSchema::refuse_key(KeyId id, std::uint32_t tag, const TypeInfo* type) const {
    require(id, tag, type);  // throws: checked_info found the key wrong
    throw std::logic_error("BlackboardSchema::refuse_key: require() accepted a key that checked_info refused");
}

void BlackboardSchema::foreign_key(KeyId id, std::uint32_t tag) const {
    std::string key = "id " + std::to_string(id);  // or its name, while its tree is alive
    std::string tree;                               // " ('a')" while its tree is alive
    {
        SealedSchemas& reg = sealed_schemas();
        const std::lock_guard lock(reg.mutex);
        if (auto it = reg.by_tag.find(tag); it != reg.by_tag.end()) {
            const BlackboardSchema& other = *it->second;
            if (id < other.keys_.size()) key = "'" + other.keys_[id].name + "'";
            tree = " ('" + other.owner_ + "')";
        }
    }
    const std::string gone = tree.empty() ? " (one that no longer exists)" : "";
    throw UsageError("blackboard key " + key + " was obtained from another tree" + tree + " than '" + owner_ + "'" + gone +
                     "; get the key from this agent's tree or blackboard");
}

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
    const auto id = static_cast<KeyId>(keys_.size());
    // A non-trivial initial value is kept as a constructed object of its own (a Value, on the heap):
    // defaults_ grows, and a std::string must never be moved byte by byte (its short form points
    // into itself). Its bytes in defaults_ stay zero and are never read.
    if (type->ops) {
        boxed_defaults_.resize(id + 1u);
        boxed_defaults_[id] = initial ? Value(type, initial) : Value(type);
        nontrivial_.push_back(id);
    } else if (initial) {
        std::memcpy(defaults_.data() + info.offset, initial, type->size);
    }
    index_.emplace(info.name, id);
    keys_.push_back(std::move(info));
    return id;
}

void BlackboardSchema::construct_values(std::byte* storage) const {
    if (!defaults_.empty()) std::memcpy(storage, defaults_.data(), defaults_.size());
    std::size_t done = 0;
    try {
        for (; done < nontrivial_.size(); ++done) {
            const KeyId k = nontrivial_[done];
            keys_[k].type->ops->copy_construct(storage + keys_[k].offset, boxed_defaults_[k].data());
        }
    } catch (...) {
        while (done-- > 0) keys_[nontrivial_[done]].type->ops->destroy(storage + keys_[nontrivial_[done]].offset);
        throw;
    }
}

bool BlackboardSchema::initial_is_default(const KeyInfo& k) const {
    if (k.type->ops) return Value(k.type) == boxed_defaults_[static_cast<KeyId>(&k - keys_.data())];
    const std::byte* v = defaults_.data() + k.offset;
    return std::all_of(v, v + k.type->size, [](std::byte b) { return b == std::byte{0}; });
}

void BlackboardSchema::copy_values(std::byte* to, const std::byte* from) const {
    if (!defaults_.empty()) std::memcpy(to, from, defaults_.size());
    std::size_t done = 0;
    try {
        for (; done < nontrivial_.size(); ++done) {
            const KeyInfo& k = keys_[nontrivial_[done]];
            k.type->ops->copy_construct(to + k.offset, from + k.offset);
        }
    } catch (...) {
        while (done-- > 0) keys_[nontrivial_[done]].type->ops->destroy(to + keys_[nontrivial_[done]].offset);
        throw;
    }
}

void BlackboardSchema::destroy_values(std::byte* storage) const noexcept {
    for (const KeyId k : nontrivial_) keys_[k].type->ops->destroy(storage + keys_[k].offset);
}

void BlackboardSchema::hash_values(detail::Fnv1a& h, const std::byte* storage) const {
    if (nontrivial_.empty()) {
        h.bytes(storage, defaults_.size());  // the common case: the bytes, as always
        return;
    }
    for (KeyId k = 0; k < keys_.size(); ++k) {
        const KeyInfo& info = keys_[k];
        if (info.type->ops) h(info.type->ops->hash(storage + info.offset));
        else h.bytes(storage + info.offset, info.type->size);
    }
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
    if (bus_ && detail::EngineAccess::has_slots(*bus_))
        detail::EngineAccess::publish(*bus_, BlackboardChange{*this, id, schema_->info(id).name, agent_});
}

}  // namespace ebt
