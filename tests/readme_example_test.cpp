// The README's first example is samples/readme_example/main.cpp (which CTest runs and whose output
// it checks): the two must stay the same program.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The program's lines without blank lines and without the comment lines above the first #include.
std::string program_lines(const std::string& text) {
    std::istringstream in(text);
    std::string line, out;
    bool code_started = false;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        if (line.rfind("#include", 0) == 0) code_started = true;
        if (!code_started) continue;
        out += line + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("readme: the README's example is samples/readme_example/main.cpp") {
    const std::string readme = slurp(std::string(EBT_SOURCE_DIR) + "/README.md");
    const std::string fence = "```cpp\n";
    const std::size_t start = readme.find(fence);
    REQUIRE(start != std::string::npos);
    const std::size_t end = readme.find("```", start + fence.size());
    REQUIRE(end != std::string::npos);
    const std::string block = readme.substr(start + fence.size(), end - start - fence.size());
    const std::string sample = slurp(std::string(EBT_SOURCE_DIR) + "/samples/readme_example/main.cpp");
    REQUIRE(!sample.empty());
    CHECK(program_lines(block) == program_lines(sample));
}
