#include "bustle/core/route_table.hpp"

#include <algorithm>

namespace bustle::core {

std::uint32_t RouteTable::add(std::span<const LaneIndex> lanes) {
  std::uint32_t slot;
  if (!state_.free_slots.empty()) {
    slot = state_.free_slots.back();
    state_.free_slots.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(state_.count.size());
    state_.offset.push_back(0);
    state_.count.push_back(0);
    state_.target.push_back(0);
  }
  state_.offset[slot] = static_cast<std::uint32_t>(state_.lanes.size());
  state_.count[slot] = static_cast<std::uint32_t>(lanes.size());
  state_.target[slot] = 1;  // lanes[0] is where the walker starts
  state_.lanes.insert(state_.lanes.end(), lanes.begin(), lanes.end());
  return slot;
}

void RouteTable::release(std::uint32_t slot) {
  garbage_ += state_.count[slot];
  state_.count[slot] = 0;
  state_.target[slot] = 0;
  state_.offset[slot] = 0;
  state_.free_slots.push_back(slot);
  if (garbage_ * 2 > state_.lanes.size()) compact();
}

std::optional<LaneIndex> RouteTable::next(std::uint32_t slot) {
  if (state_.target[slot] >= state_.count[slot]) return std::nullopt;
  return state_.lanes[state_.offset[slot] + state_.target[slot]++];
}

void RouteTable::set_state(RouteTableState s) {
  state_ = std::move(s);
  std::uint64_t used = 0;
  for (const std::uint32_t c : state_.count) used += c;
  garbage_ = static_cast<std::uint32_t>(state_.lanes.size() - used);
}

void RouteTable::compact() {
  std::vector<LaneIndex> packed;
  packed.reserve(state_.lanes.size() - garbage_);
  for (std::size_t slot = 0; slot < state_.count.size(); ++slot) {
    if (state_.count[slot] == 0) continue;
    const std::uint32_t from = state_.offset[slot];
    state_.offset[slot] = static_cast<std::uint32_t>(packed.size());
    packed.insert(packed.end(), state_.lanes.begin() + from,
                  state_.lanes.begin() + from + state_.count[slot]);
  }
  state_.lanes = std::move(packed);
  garbage_ = 0;
}

Status RouteTable::validate(const RouteTableState& s, std::uint32_t lane_count) {
  const std::size_t n = s.count.size();
  if (s.offset.size() != n || s.target.size() != n)
    return Status::data_loss("routes: column lengths differ");
  std::vector<std::uint8_t> is_free(n, 0);
  for (std::size_t k = 0; k < s.free_slots.size(); ++k) {
    const std::uint32_t f = s.free_slots[k];
    if (f >= n || is_free[f] || s.count[f] != 0) {
      return Status::data_loss("routes.free_slots[" + std::to_string(k) +
                               "]: not a free slot, or listed twice");
    }
    is_free[f] = 1;
  }
  for (std::size_t slot = 0; slot < n; ++slot) {
    const std::string at = "routes[" + std::to_string(slot) + "]";
    if (s.count[slot] == 0) {
      if (!is_free[slot])
        return Status::data_loss(at + ".count: an empty route must be on the free list");
      continue;
    }
    if (std::uint64_t{s.offset[slot]} + s.count[slot] > s.lanes.size())
      return Status::data_loss(at + ".offset: outside the buffer");
    if (s.target[slot] > s.count[slot]) return Status::data_loss(at + ".target: beyond the route");
  }
  for (std::size_t k = 0; k < s.lanes.size(); ++k) {
    if (s.lanes[k] >= lane_count)
      return Status::data_loss("routes.lanes[" + std::to_string(k) + "]: unknown lane");
  }
  return {};
}

}  // namespace bustle::core
