// The bulk of a checkpoint capture: contiguous column copies (pedestrian
// and resident columns, the registry's slots) collected first, then run as
// parts on the PhaseExecutor the application lent the World (issue 17: at
// 1 M active pedestrians these copies are ~50 MB and were the whole
// sim-thread stall).
//
// Parts are fixed by the data alone: each column is cut into pieces of
// kBytesPerPart bytes (the last one shorter), in the order the columns were
// added, never as a function of the thread count. A part copies only its own
// destination bytes and reads only state that nothing writes while parts
// run, so the captured bytes are the same for every executor and any number
// of threads (tests/app/thread_phase_executor_test.cpp).
//
// Invariants:
//   1. At most kMaxColumns columns (asserted in add(); the capture adds a
//      fixed set, so this is a programmer error, never an input).
//   2. Destinations are distinct, already sized, non-overlapping ranges.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "bustle/core/phase_executor.hpp"

namespace bustle::core {

class ColumnCopies {
 public:
  static constexpr std::size_t kMaxColumns = 24;
  // Large enough that a part (~0.1 ms of memcpy) dwarfs handing it to a
  // thread; small enough that 1 M pedestrians give ~50 parts to share.
  static constexpr std::size_t kBytesPerPart = std::size_t{1} << 20;

  // Queues a copy of n elements from src to dst (dst must hold n elements).
  template <class T>
  void add(T* dst, const T* src, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    assert(count_ < kMaxColumns);
    if (n == 0) return;
    const std::size_t bytes = n * sizeof(T);
    columns_[count_] = {reinterpret_cast<std::byte*>(dst), reinterpret_cast<const std::byte*>(src),
                        bytes, parts_};
    parts_ += static_cast<std::uint32_t>((bytes + kBytesPerPart - 1) / kBytesPerPart);
    ++count_;
  }

  // Sizes dst like src (no allocation when its capacity suffices, and no
  // writes when it already has that size) and queues the copy of src.
  template <class T>
  void add_column(std::vector<T>& dst, const std::vector<T>& src) {
    dst.resize(src.size());
    add(dst.data(), src.data(), src.size());
  }

  std::uint32_t parts() const { return parts_; }

  // Runs every queued copy (on `executor`'s threads) and forgets them.
  void run(PhaseExecutor& executor) {
    run_parts(executor, parts_, [this](std::uint32_t part) { copy_part(part); });
    count_ = 0;
    parts_ = 0;
  }

 private:
  struct Column {
    std::byte* dst = nullptr;
    const std::byte* src = nullptr;
    std::size_t bytes = 0;
    std::uint32_t first_part = 0;
  };

  void copy_part(std::uint32_t part) const {
    std::size_t c = 0;
    while (c + 1 < count_ && columns_[c + 1].first_part <= part) ++c;
    const Column& col = columns_[c];
    assert(part >= col.first_part);
    const std::size_t begin = std::size_t{part - col.first_part} * kBytesPerPart;
    assert(begin < col.bytes);
    const std::size_t len = col.bytes - begin < kBytesPerPart ? col.bytes - begin : kBytesPerPart;
    std::memcpy(col.dst + begin, col.src + begin, len);
  }

  std::array<Column, kMaxColumns> columns_{};
  std::size_t count_ = 0;
  std::uint32_t parts_ = 0;
};

}  // namespace bustle::core
