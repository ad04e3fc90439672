// libFuzzer target over the XML loader (and the saver): any input must either load or throw
// ebt::xml::LoadError (a BuildError); a tree that loads must save, and its saved form must load back
// to the same listing. Anything else (another exception, a crash, a sanitizer report, a hang) is a
// bug. Built by fuzz/CMakeLists.txt (EBT_BUILD_FUZZ=ON, clang); run with fuzz/run.sh SECONDS.
#include "fuzz_registry.hpp"

#include <ebt/xml.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const ebt::Registry registry = ebt::fuzz::registry();
    static const ebt::xml::Loader loader(registry, {.allow_includes = false});
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ebt::Tree tree;
    try {
        tree = loader.load_string(text, "fuzz.xml");
    } catch (const ebt::BuildError&) {
        return 0;  // rejected with a message: fine
    }
    std::string saved;
    try {
        saved = ebt::xml::save(tree, registry);
    } catch (const ebt::xml::SaveError& e) {
        // Only what XML cannot express is refused; a tree that came from XML can always be saved.
        std::fprintf(stderr, "save failed on a loaded tree: %s\n", e.what());
        std::abort();
    }
    ebt::Tree again;
    try {
        again = loader.load_string(saved, "saved.xml");
    } catch (const ebt::BuildError& e) {
        std::fprintf(stderr, "the saved form does not load: %s\n--- saved:\n%s\n", e.what(), saved.c_str());
        std::abort();
    }
    if (again.describe() != tree.describe()) {
        std::fprintf(stderr, "round trip changed the tree:\n%s\n--- became:\n%s\n--- saved:\n%s\n", tree.describe().c_str(),
                     again.describe().c_str(), saved.c_str());
        std::abort();
    }
    return 0;
}
