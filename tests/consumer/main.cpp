// Built against an *installed* ebt by the package_consumer test: only the
// public headers and the exported ebt::ebt target are available here.
#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>  // installed too: subscribing to blackboard changes
#include <ebt/debug/inspector.hpp>  // the live inspector: its server thread links through the package

#ifndef EBT_HAS_XML
#error "<ebt/ebt.hpp> must provide <ebt/config.hpp>'s EBT_HAS_XML"
#endif

int main() {
    if (ebt::version_string() == nullptr) return 1;
    {
        ebt::ChangeBus bus;
        int changes = 0;
        const boost::signals2::scoped_connection slot = bus.subscribe([&](const ebt::BlackboardChange&) { ++changes; });
        ebt::Agent agent(ebt::TreeBuilder("T").key<int>("n", 0).always_success().end(), {.bus = &bus});
        agent.blackboard().set("n", 1);
        if (changes != 1) return 1;
    }
    {
        ebt::World world;
        ebt::debug::Inspector inspector(world);  // serves on a free port of 127.0.0.1 until destroyed
        if (inspector.port() == 0 || !inspector.before_frame()) return 1;
        inspector.after_frame(world.step(0.05));
    }
#if EBT_HAS_XML
    // The XML loader links pugixml, which the package finds for us (find_dependency).
    const ebt::Registry registry;
    const ebt::Tree tree = ebt::xml::Loader(registry).load_string(
        "<root BTCPP_format=\"4\"><BehaviorTree ID=\"T\"><AlwaysSuccess/></BehaviorTree></root>");
    if (tree.name() != "T") return 1;
#endif
    return 0;
}
