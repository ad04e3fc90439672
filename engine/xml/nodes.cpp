// The XML node vocabulary: BehaviorTree.CPP's built-in nodes that ebt maps, ebt's own nodes, and the
// BehaviorTree.CPP nodes ebt refuses (with the reason).
#include "xml/xml_internal.hpp"

#include <cstring>

namespace ebt::xml::detail {

const char* to_string(Category c) noexcept {
    switch (c) {
    case Category::Control: return "Control";
    case Category::Decorator: return "Decorator";
    case Category::Action: return "Action";
    case Category::Condition: return "Condition";
    }
    return "?";
}

const std::vector<BuiltinNode>& builtin_nodes() {
    static const std::vector<BuiltinNode> nodes = {
        // name                   kind                            category             canonical ebt_only
        {"Sequence",              NodeKind::Sequence,             Category::Control,   true,  false},
        {"Fallback",              NodeKind::Selector,             Category::Control,   true,  false},
        {"Selector",              NodeKind::Selector,             Category::Control,   false, false},
        {"ReactiveSequence",      NodeKind::ReactiveSequence,     Category::Control,   true,  false},
        {"ReactiveFallback",      NodeKind::ActiveSelector,       Category::Control,   true,  false},
        {"ActiveSelector",        NodeKind::ActiveSelector,       Category::Control,   false, false},
        {"Parallel",              NodeKind::Parallel,             Category::Control,   true,  false},
        {"Filter",                NodeKind::Filter,               Category::Control,   true,  true},
        {"PrioritySelector",      NodeKind::PrioritySelector,     Category::Control,   true,  true},
        {"NonPrioritySelector",   NodeKind::NonPrioritySelector,  Category::Control,   true,  true},
        {"RandomSelector",        NodeKind::RandomSelector,       Category::Control,   true,  true},
        {"WeightedSelector",      NodeKind::WeightedSelector,     Category::Control,   true,  true},
        {"Monitor",               NodeKind::Monitor,              Category::Control,   true,  true},
        {"Inverter",              NodeKind::Inverter,             Category::Decorator, true,  false},
        {"ForceSuccess",          NodeKind::ForceSuccess,         Category::Decorator, true,  false},
        {"ForceFailure",          NodeKind::ForceFailure,         Category::Decorator, true,  false},
        {"Repeat",                NodeKind::Repeat,               Category::Decorator, true,  false},
        {"RetryUntilSuccessful",  NodeKind::Retry,                Category::Decorator, true,  false},
        {"Retry",                 NodeKind::Retry,                Category::Decorator, false, false},
        {"Timeout",               NodeKind::Timeout,              Category::Decorator, true,  false},
        {"Delay",                 NodeKind::Delay,                Category::Decorator, true,  false},
        {"Loop",                  NodeKind::Loop,                 Category::Decorator, true,  true},
        {"Cooldown",              NodeKind::Cooldown,             Category::Decorator, true,  true},
        {"AlwaysSuccess",         NodeKind::AlwaysSuccess,        Category::Action,    true,  false},
        {"AlwaysFailure",         NodeKind::AlwaysFailure,        Category::Action,    true,  false},
        {"Sleep",                 NodeKind::Wait,                 Category::Action,    true,  false},
        {"Wait",                  NodeKind::Wait,                 Category::Action,    false, false},
        {"ScriptCondition",       NodeKind::Condition,            Category::Condition, false, false},
    };
    return nodes;
}

const BuiltinNode* find_builtin(std::string_view name) noexcept {
    for (const auto& n : builtin_nodes())
        if (name == n.name) return &n;
    return nullptr;
}

const BuiltinNode& canonical_builtin(NodeKind kind) noexcept {
    for (const auto& n : builtin_nodes())
        if (n.kind == kind && n.canonical) return n;
    return builtin_nodes().back();
}

std::vector<BuiltinParam> builtin_params(NodeKind kind) {
    switch (kind) {
    case NodeKind::Parallel:
    case NodeKind::Monitor: return {{"success_count", "int", "-1"}, {"failure_count", "int", "1"}};
    case NodeKind::WeightedSelector: return {{"weights", "std::vector<double>", nullptr}};
    case NodeKind::Repeat:
    case NodeKind::Loop: return {{"num_cycles", "int", nullptr}};
    case NodeKind::Retry: return {{"num_attempts", "int", nullptr}};
    case NodeKind::Timeout:
    case NodeKind::Cooldown:
    case NodeKind::Wait: return {{"msec", "unsigned", nullptr}};
    case NodeKind::Delay: return {{"delay_msec", "unsigned", nullptr}};
    case NodeKind::Condition: return {{"code", "std::string", nullptr}};
    default: return {};
    }
}

const char* unsupported_node(std::string_view name) noexcept {
    struct Entry {
        const char* name;
        const char* why;
    };
    static const Entry entries[] = {
        {"SequenceWithMemory", "ebt's sequences restart from their first child after a failure; there is no sequence with memory"},
        {"SequenceStar", "a BehaviorTree.CPP v3 node (SequenceWithMemory in v4), which ebt does not have"},
        {"FallbackStar", "a BehaviorTree.CPP v3 node, which ebt does not have"},
        {"ReactiveFallbackStar", "a BehaviorTree.CPP v3 node, which ebt does not have"},
        {"ParallelAll", "use <Parallel success_count=... failure_count=...>"},
        {"IfThenElse", "ebt has no IfThenElse; use a Fallback of guarded Sequences"},
        {"WhileDoElse", "ebt has no WhileDoElse; use a ReactiveFallback of guarded Sequences"},
        {"Switch2", "ebt has no Switch nodes; use a Fallback of Sequences guarded by conditions"},
        {"Switch3", "ebt has no Switch nodes; use a Fallback of Sequences guarded by conditions"},
        {"Switch4", "ebt has no Switch nodes; use a Fallback of Sequences guarded by conditions"},
        {"Switch5", "ebt has no Switch nodes; use a Fallback of Sequences guarded by conditions"},
        {"Switch6", "ebt has no Switch nodes; use a Fallback of Sequences guarded by conditions"},
        {"ManualSelector", "ebt has no ManualSelector"},
        {"AsyncSequence", "ebt has no AsyncSequence (every tick is already incremental)"},
        {"AsyncFallback", "ebt has no AsyncFallback (every tick is already incremental)"},
        {"KeepRunningUntilFailure", "ebt has no KeepRunningUntilFailure; <Repeat num_cycles=\"-1\"> behaves the same"},
        {"RunOnce", "ebt has no RunOnce"},
        {"Precondition", "ebt has no Precondition decorator; use the _precondition attribute"},
        {"LoopInt", "ebt has no queue loops"},
        {"LoopDouble", "ebt has no queue loops"},
        {"LoopString", "ebt has no queue loops"},
        {"LoopBool", "ebt has no queue loops"},
        {"SetBlackboard", "ebt trees do not write the blackboard by themselves; write it from an action"},
        {"UnsetBlackboard", "ebt blackboard keys are declared and always hold a value"},
        {"Script", "ebt has no scripting; write the blackboard from an action"},
        {"WasEntryUpdated", "ebt has no entry-update nodes; guards already react to key changes"},
        {"SkipUnlessUpdated", "ebt has no entry-update nodes; guards already react to key changes"},
        {"WaitValueUpdate", "ebt has no entry-update nodes; guards already react to key changes"},
        {"TestNode", "ebt has no TestNode"},
        {"SubTreePlus", "a BehaviorTree.CPP v3 node; use <SubTree ID=...> with _autoremap"},
        {"BlackboardCheckInt", "a BehaviorTree.CPP v3 node; register a condition instead"},
        {"BlackboardCheckDouble", "a BehaviorTree.CPP v3 node; register a condition instead"},
        {"BlackboardCheckString", "a BehaviorTree.CPP v3 node; register a condition instead"},
        {"BlackboardCheckBool", "a BehaviorTree.CPP v3 node; use <ScriptCondition code=\"key\"/>"},
    };
    for (const auto& e : entries)
        if (name == e.name) return e.why;
    return nullptr;
}

bool is_script_attribute(std::string_view name) noexcept {
    static const char* const names[] = {"_skipIf", "_successIf", "_failureIf", "_while",
                                        "_onSuccess", "_onFailure", "_onHalted", "_post"};
    for (const char* n : names)
        if (name == n) return true;
    return false;
}

bool is_xml_name(std::string_view s) noexcept {
    if (s.empty()) return false;
    auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    auto rest = [&](char c) { return start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; };
    if (!start(s[0])) return false;
    for (char c : s)
        if (!rest(c)) return false;
    // "xml..." names are reserved by XML itself.
    if (s.size() >= 3 && (s[0] == 'x' || s[0] == 'X') && (s[1] == 'm' || s[1] == 'M') && (s[2] == 'l' || s[2] == 'L'))
        return false;
    static const char* const reserved[] = {"root", "BehaviorTree", "TreeNodesModel", "include", "SubTree", "Action",
                                           "Condition", "Control", "Decorator", "Blackboard", "Entry"};
    for (const char* r : reserved)
        if (s == r) return false;
    return !find_builtin(s) && !unsupported_node(s);
}

}  // namespace ebt::xml::detail
