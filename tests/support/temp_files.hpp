// Files the tests write and read back: a path in the system's temporary directory that holds the
// test file's own prefix and the process id (ctest runs cases of one file in parallel processes),
// and a whole file's bytes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace ebt::test {

/// <temp dir>/<prefix>_<pid>_<name>.
inline std::filesystem::path temp_file(const std::string& prefix, const std::string& name) {
    return std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()) + "_" + name);
}

/// The bytes of file `path` (empty if it cannot be read).
inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
    return bytes;
}

}  // namespace ebt::test
