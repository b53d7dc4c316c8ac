// Replays fuzz inputs through a fuzz target's entry point, each input once,
// with no mutation: the deterministic half of fuzzing, which `make test` runs
// (ctest `fuzz-replay:<target>`) on the checked-in seed corpus and the
// regression inputs of tests/fuzz/regressions/<target>/.
//
//   <target>-replay PATH...   each PATH a file or a directory of files
//
// It is linked with the target's own source (LLVMFuzzerTestOneInput) in the
// release tree, so every project assertion is on; the sanitizer builds run
// the same inputs through libFuzzer itself (`make fuzz-replay`, the `fuzz`
// preset). Files are replayed in name order so a run's output is the same
// every time. Exit 0 when every input ran, 2 on a usage or I/O error; a
// finding aborts the process, as it would under libFuzzer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The files PATH names: itself, or a directory's regular files (not
// recursive), sorted by name. Returns false, having said why, on an error.
bool collect(const fs::path& path, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    out.push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    std::fprintf(stderr, "replay: %s: no such file or directory\n", path.c_str());
    return false;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (ec) {
    std::fprintf(stderr, "replay: %s: %s\n", path.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(files.begin(), files.end());
  out.insert(out.end(), files.begin(), files.end());
  return true;
}

bool read_file(const fs::path& path, std::vector<std::uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH...  (files or directories of fuzz inputs)\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], inputs)) return 2;
  }
  std::size_t bytes_total = 0;
  std::vector<std::uint8_t> bytes;
  for (const fs::path& path : inputs) {
    if (!read_file(path, bytes)) {
      std::fprintf(stderr, "replay: %s: cannot read\n", path.c_str());
      return 2;
    }
    // Printed before the run, so the input that aborts is the last one named.
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    // A copy of exactly the input's size, so a read past the end is past the
    // allocation, as under libFuzzer.
    const std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
    (void)LLVMFuzzerTestOneInput(input.data(), input.size());
    bytes_total += bytes.size();
  }
  std::printf("replay: %zu inputs (%zu bytes) ran without a finding\n", inputs.size(), bytes_total);
  return 0;
}
