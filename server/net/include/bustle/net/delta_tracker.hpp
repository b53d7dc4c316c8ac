// Per-client delta encoding: what changed since what this client last received.
//
// The tracker remembers the quantized state it last sent (sorted by entity
// index) and merge-walks it against each new PublishedFrame, in one pass:
//   - in the frame, not sent before (or same index, newer generation) -> entered
//   - sent before and the quantized state differs                    -> updated
//   - sent before, absent from the frame (or replaced by a newer gen)  -> left
// Because it diffs against what was *sent*, not against the previous step,
// skipping frames (slow client) yields one coalesced delta, never a backlog.
#pragma once

#include <cstdint>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "bustle/net/published_frame.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::net {

class DeltaTracker {
 public:
  struct Counts {
    std::uint32_t entered = 0;
    std::uint32_t updated = 0;
    std::uint32_t left = 0;
  };

  // Bit k set = EntityKind k subscribed. Changing it forces a baseline.
  void set_kind_mask(std::uint32_t mask);
  // The next encode() sends a baseline: everything as entered, baseline = true.
  void reset();
  bool baseline_pending() const { return baseline_pending_; }

  // Encodes a finished ServerFrame{Delta} into fbb (which is Clear()ed first).
  Counts encode(const PublishedFrame& frame, flatbuffers::FlatBufferBuilder& fbb);

  std::size_t tracked() const { return sent_.size(); }

 private:
  bool wanted(const QuantizedEntity& e) const {
    return (kind_mask_ >> static_cast<std::uint32_t>(e.kind)) & 1u;
  }

  std::uint32_t kind_mask_ = ~0u;
  bool baseline_pending_ = true;
  std::vector<QuantizedEntity> sent_;
  std::vector<QuantizedEntity> next_sent_;
  std::vector<wire::EntityState> entered_;
  std::vector<wire::EntityState> updated_;
  std::vector<wire::EntityId> left_;
  std::vector<wire::SignalPhaseState> signals_;
};

}  // namespace bustle::net
