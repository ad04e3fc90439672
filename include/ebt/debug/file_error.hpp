// FileFormatError: what ebt's debug files (trace logs, recordings, snapshots) throw when a file cannot
// be read: a wrong kind of file, a version this build does not read, a truncated or corrupt file.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ebt::debug {

/// The message names the file, the byte offset where reading stopped and what was wrong, e.g.
/// "run.ebtlog: byte 4096: truncated: the file ends inside a record (a crash while writing?)".
class FileFormatError : public std::runtime_error {
public:
    FileFormatError(std::string file, std::uint64_t offset, const std::string& problem)
        : std::runtime_error(file + ": byte " + std::to_string(offset) + ": " + problem),
          file_(std::move(file)), offset_(offset) {}
    const std::string& file() const noexcept { return file_; }
    std::uint64_t offset() const noexcept { return offset_; }

private:
    std::string file_;
    std::uint64_t offset_;
};

}  // namespace ebt::debug
