// Helpers shared by the fuzz targets that read files (snapshots, recordings).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bustle/core/world.hpp"

namespace bustle::fuzz {

// Builds a world with at most this entity capacity (harness limit: bigger
// scenarios are still loaded and validated, but allocating 2^24 slots per
// input would leave no time for exploring anything else).
inline constexpr std::uint32_t kWorldCapacityMax = 1u << 16;

// A file that holds the current input, in /dev/shm when it exists (no disk
// I/O per execution), named by process id so parallel fuzzers never share
// one. SQLite's side files (-wal, -shm, -journal) are removed with it.
class InputFile {
 public:
  explicit InputFile(const char* stem) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/" + stem + "-" + std::to_string(getpid()) + ".db";
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { remove(); }

  const std::string& write(const std::uint8_t* data, std::size_t size) {
    remove();
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) std::abort();  // the harness cannot run: not a finding in the code
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path_;
  }
  void remove() const {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::remove((path_ + suffix).c_str());
  }

 private:
  std::string path_;
};

// What the server does with a validated candidate world: it becomes the live
// world and steps. A candidate that passed validation must step cleanly.
inline void step_candidate(core::World& world, int steps = 2) {
  for (int i = 0; i < steps; ++i) world.step();
}

}  // namespace bustle::fuzz
