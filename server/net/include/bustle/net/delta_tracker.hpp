// Per-client delta encoding: what changed since what this client last received.
//
// The tracker remembers the quantized state it last sent (sorted by entity
// index) and merge-walks it against each new PublishedFrame, in one pass:
//   - in the frame, not sent before (or same index, newer generation) -> entered
//   - sent before and the quantized state differs                    -> updated
//   - sent before, absent from the frame (or replaced by a newer gen)  -> left
// Because it diffs against what was *sent*, not against the previous step,
// skipping frames (slow client) yields one coalesced delta, never a backlog.
//
// Retiring (orphans fading out) is announced once per entity: an entity in
// the frame marked retiring that this client was not yet told about goes to
// Delta.retiring (so a baseline lists every entity already fading). Without
// skipped frames that is exactly the entities that began fading this step.
// An entity announced as retiring that shows up again not retiring (a
// resident that went dormant and came back between two deltas of a slow
// client) is sent as left + entered, so the client never keeps a stale
// retiring mark.
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
    std::uint32_t retiring = 0;
  };

  // Bit k set = EntityKind k subscribed. Changing it forces a baseline.
  void set_kind_mask(std::uint32_t mask);
  // The next encode() sends a baseline: everything as entered, baseline = true.
  void reset();
  bool baseline_pending() const { return baseline_pending_; }

  // Encodes a finished ServerFrame{Delta} into fbb (which is Clear()ed first).
  // `dots_per_chain`, when given, is sent as Delta.dots (count per chain, chain index =
  // position); the caller decides when (see Session: the latest dots once).
  Counts encode(const PublishedFrame& frame, flatbuffers::FlatBufferBuilder& fbb,
                const std::vector<std::uint16_t>* dots_per_chain = nullptr);

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
  std::vector<wire::EntityId> retiring_;
  std::vector<wire::SignalPhaseState> signals_;
  std::vector<wire::ChainDots> dots_;
};

}  // namespace bustle::net
