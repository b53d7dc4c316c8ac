// Which rows of a set of columns were written since a checkpoint buffer was
// last filled (issue 17: a capture into a recycled WorldCheckpoint copies only
// those rows, not the ~50 MB of columns a full copy moves at 1 M pedestrians).
//
// Rows are grouped in chunks of kRowsPerChunk; each chunk keeps the capture
// epoch of its last write. Every code path that writes a stamped column
// calls mark(row) (one store, no branch, no allocation); a capture copies the
// chunks stamped after the epoch its destination buffer holds
// (ColumnCopies::add_written) and then starts the next epoch.
//
// Invariants:
//   1. A row written while the epoch is e has its chunk stamped >= e (mark()
//      stores the current epoch; epochs never go back).
//   2. The stamps cover `rows_max` rows, fixed at reserve (the columns' fixed
//      capacity); mark() beyond it is a programmer error (asserted).
//   3. Stamps never change what the simulation computes: they are not state
//      (not digested, not checkpointed) and only decide which bytes a capture
//      copies, never their values.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

namespace bustle::core {

class RowWriteStamps {
 public:
  static constexpr std::uint32_t kRowsPerChunkLog2 = 8;
  static constexpr std::uint32_t kRowsPerChunk = std::uint32_t{1} << kRowsPerChunkLog2;

  // Covers rows [0, rows_max); every chunk counts as written now.
  void reserve(std::uint32_t rows_max) {
    stamps_.assign((std::size_t{rows_max} + kRowsPerChunk - 1) >> kRowsPerChunkLog2, epoch_);
  }

  // The row's chunk was written in the current epoch.
  void mark(std::uint32_t row) {
    assert((row >> kRowsPerChunkLog2) < stamps_.size());
    stamps_[row >> kRowsPerChunkLog2] = epoch_;
  }
  // Every row (a wholesale replacement such as a restore's import).
  void mark_all() { stamps_.assign(stamps_.size(), epoch_); }

  // Whether chunk c was written after `held_epoch` (the epoch a buffer holds).
  bool written_after(std::size_t chunk, std::uint64_t held_epoch) const {
    return stamps_[chunk] > held_epoch;
  }
  std::size_t chunks() const { return stamps_.size(); }
  // Rows of [0, rows) in chunks written after `held_epoch` (what a capture
  // into a buffer holding that epoch copies).
  std::uint32_t rows_written_after(std::uint32_t rows, std::uint64_t held_epoch) const {
    std::uint32_t total = 0;
    for (std::uint32_t first = 0, c = 0; first < rows; first += kRowsPerChunk, ++c) {
      if (written_after(c, held_epoch))
        total += rows - first < kRowsPerChunk ? rows - first : kRowsPerChunk;
    }
    return total;
  }
  std::uint64_t epoch() const { return epoch_; }

  // Starts epoch `next` (> the current one). A capture calls this on the
  // const world: the epoch is bookkeeping of the copies, not world state.
  void start_epoch(std::uint64_t next) const {
    assert(next > epoch_);
    epoch_ = next;
  }

 private:
  std::vector<std::uint64_t> stamps_;
  mutable std::uint64_t epoch_ = 1;
};

}  // namespace bustle::core
