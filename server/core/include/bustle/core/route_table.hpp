// Routes in one shared buffer (DESIGN §3, identity and storage): every route
// is a slice (offset, count) of one vector of lane indices, plus the index of
// the next lane to take (target). Route slots are stable handles with a free
// list, so a pedestrian keeps a 4-byte slot instead of its own vector, and
// memory stays contiguous however many routes come and go. Freed slices are
// reclaimed by compaction when garbage exceeds half the buffer (a
// deterministic rewrite of offsets, in slot order).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/lane_graph.hpp"
#include "bustle/core/status.hpp"

namespace bustle::core {

inline constexpr std::uint32_t kNoRoute = UINT32_MAX;

struct RouteTableState {
  std::vector<LaneIndex> lanes;           // the shared buffer
  std::vector<std::uint32_t> offset;      // per slot
  std::vector<std::uint32_t> count;       // per slot; 0 = free slot
  std::vector<std::uint32_t> target;      // per slot: next lane to take, in [0, count]
  std::vector<std::uint32_t> free_slots;  // LIFO
  friend bool operator==(const RouteTableState&, const RouteTableState&) = default;
};

class RouteTable {
 public:
  // Stores a route (at least one lane); returns its slot.
  std::uint32_t add(std::span<const LaneIndex> lanes);
  void release(std::uint32_t slot);
  // The lane after the current one, advancing the target; nullopt when the
  // route is used up.
  std::optional<LaneIndex> next(std::uint32_t slot);
  // The lane next() would return, without advancing.
  std::optional<LaneIndex> peek(std::uint32_t slot) const {
    if (state_.target[slot] >= state_.count[slot]) return std::nullopt;
    return state_.lanes[state_.offset[slot] + state_.target[slot]];
  }
  LaneIndex first(std::uint32_t slot) const { return state_.lanes[state_.offset[slot]]; }
  std::uint32_t live() const {
    return static_cast<std::uint32_t>(state_.count.size() - state_.free_slots.size());
  }

  const RouteTableState& state() const { return state_; }
  // Ok when consistent, else DataLoss "field[i]: message" (a restored table).
  static Status validate(const RouteTableState& s, std::uint32_t lane_count);
  void set_state(RouteTableState s);

 private:
  void compact();
  RouteTableState state_;
  std::uint32_t garbage_ = 0;  // lanes of released slices still in the buffer
};

}  // namespace bustle::core
