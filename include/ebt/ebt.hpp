// ebt: an event-driven behavior tree engine for game servers. Include this header for everything.
#pragma once

#include <ebt/agent.hpp>
#include <ebt/assert.hpp>
#include <ebt/blackboard.hpp>
#include <ebt/builder.hpp>
#include <ebt/config.hpp>
#include <ebt/limits.hpp>
#include <ebt/registry.hpp>
#include <ebt/shared_blackboard.hpp>
#include <ebt/status.hpp>
#include <ebt/trace.hpp>
#include <ebt/tree.hpp>
#include <ebt/world.hpp>
#if EBT_HAS_XML  // (a build with -DEBT_XML=OFF has no XML loader and saver)
#include <ebt/xml.hpp>
#endif

namespace ebt {
/// The library version, e.g. "0.1.0".
const char* version_string() noexcept;
}  // namespace ebt
