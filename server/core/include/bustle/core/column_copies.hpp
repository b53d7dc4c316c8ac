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
// A column added with add_written() copies only the chunks of rows its
// RowWriteStamps say were written after the epoch the destination holds
// (row_write_stamps.hpp); its parts are cut at chunk boundaries, so a part
// still owns its own destination bytes.
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
#include "bustle/core/row_write_stamps.hpp"

namespace bustle::core {

class ColumnCopies {
 public:
  static constexpr std::size_t kMaxColumns = 32;
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
    columns_[count_] = {reinterpret_cast<std::byte*>(dst),
                        reinterpret_cast<const std::byte*>(src),
                        bytes,
                        parts_,
                        kBytesPerPart,
                        nullptr,
                        0,
                        0};
    parts_ += static_cast<std::uint32_t>((bytes + kBytesPerPart - 1) / kBytesPerPart);
    ++count_;
  }

  // Queues the copy of the rows of src that `written` says changed after
  // `held_epoch`, the epoch dst holds (0: dst holds nothing, copy it all).
  // Sizes dst like src; rows added since are stamped by whoever pushed them.
  template <class T>
  void add_written(std::vector<T>& dst, const std::vector<T>& src, const RowWriteStamps& written,
                   std::uint64_t held_epoch) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (held_epoch == 0) {
      add_column(dst, src);
      return;
    }
    assert(count_ < kMaxColumns);
    assert(((src.size() + RowWriteStamps::kRowsPerChunk - 1) >>
            RowWriteStamps::kRowsPerChunkLog2) <= written.chunks());
    dst.resize(src.size());
    if (src.empty()) return;
    const std::size_t bytes = src.size() * sizeof(T);
    const std::size_t chunk_bytes = std::size_t{RowWriteStamps::kRowsPerChunk} * sizeof(T);
    const std::size_t part_bytes =
        kBytesPerPart > chunk_bytes ? kBytesPerPart / chunk_bytes * chunk_bytes : chunk_bytes;
    columns_[count_] = {reinterpret_cast<std::byte*>(dst.data()),
                        reinterpret_cast<const std::byte*>(src.data()),
                        bytes,
                        parts_,
                        part_bytes,
                        &written,
                        held_epoch,
                        chunk_bytes};
    parts_ += static_cast<std::uint32_t>((bytes + part_bytes - 1) / part_bytes);
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
    std::size_t part_bytes = kBytesPerPart;
    const RowWriteStamps* written = nullptr;  // null: copy every byte
    std::uint64_t held_epoch = 0;
    std::size_t chunk_bytes = 0;
  };

  void copy_part(std::uint32_t part) const {
    std::size_t c = 0;
    while (c + 1 < count_ && columns_[c + 1].first_part <= part) ++c;
    const Column& col = columns_[c];
    assert(part >= col.first_part);
    const std::size_t begin = std::size_t{part - col.first_part} * col.part_bytes;
    assert(begin < col.bytes);
    const std::size_t end = col.bytes - begin < col.part_bytes ? col.bytes : begin + col.part_bytes;
    if (col.written == nullptr) {
      std::memcpy(col.dst + begin, col.src + begin, end - begin);
      return;
    }
    // Runs of written chunks, each one memcpy.
    assert(begin % col.chunk_bytes == 0);
    std::size_t run = end;  // start of the current run of written chunks, or none
    for (std::size_t at = begin; at < end; at += col.chunk_bytes) {
      const bool written = col.written->written_after(at / col.chunk_bytes, col.held_epoch);
      if (written && run == end) run = at;
      if (!written && run != end) {
        std::memcpy(col.dst + run, col.src + run, at - run);
        run = end;
      }
    }
    if (run != end) std::memcpy(col.dst + run, col.src + run, end - run);
  }

  std::array<Column, kMaxColumns> columns_{};
  std::size_t count_ = 0;
  std::uint32_t parts_ = 0;
};

}  // namespace bustle::core
