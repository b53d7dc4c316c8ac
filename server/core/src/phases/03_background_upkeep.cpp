// Phase 3 of World::step(): background upkeep, guided by the lane density
// ledger.
//
// Sections: the ledger (per sidewalk fragment, the share of the target and
// the background pedestrians on it; also the public density views), then the
// phase itself: trim the largest surplus or grow the largest deficit,
// within pedestrians.spawn_per_step_max.
#include <algorithm>
#include <cassert>
#include <limits>

#include "bustle/core/world.hpp"

namespace bustle::core {

void World::ledger_targets(std::vector<double>& out) const {
  // The background target shared among sidewalk fragments by length (a
  // district world's among its own, world_districts.cpp).
  const auto& frags = lanes_.fragments();
  double total = 0.0;
  for (const LaneFragment& f : frags) total += leaves_district(f.lane) ? 0.0 : f.length_m;
  out.assign(frags.size(), 0.0);
  for (std::size_t k = 0; k < frags.size() && total > 0.0; ++k) {
    if (!leaves_district(frags[k].lane)) out[k] = pedestrian_target_ * frags[k].length_m / total;
  }
}

void World::ledger_counts(std::vector<std::uint32_t>& out,
                          std::vector<std::uint32_t>* fragment_of_slot) const {
  out.assign(lanes_.fragments().size(), 0);
  if (fragment_of_slot != nullptr)
    fragment_of_slot->assign(pedestrians_.size(), LaneGraph::kNoFragment);
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    if (pedestrians_.origin[i] != static_cast<std::uint8_t>(PedestrianOrigin::Background)) continue;
    const std::uint32_t f = lanes_.fragment_of(pedestrians_.lane[i], pedestrians_.s_m[i]);
    if (f == LaneGraph::kNoFragment) continue;
    ++out[f];
    if (fragment_of_slot != nullptr) (*fragment_of_slot)[i] = f;
  }
}

void World::refresh_ledger_target() {
  if (ledger_target_for_ == pedestrian_target_) return;
  ledger_targets(ledger_target_);
  ledger_target_for_ = pedestrian_target_;
}

void World::density_ledger(std::vector<double>& out) const {
  ledger_targets(out);
  std::vector<std::uint32_t> actual;
  ledger_counts(actual);
  for (std::size_t f = 0; f < out.size(); ++f) out[f] -= actual[f];
}

LedgerSummary World::ledger_summary() const {
  std::vector<double> gap;
  density_ledger(gap);
  LedgerSummary s;
  s.fragments = static_cast<std::uint32_t>(gap.size());
  for (const double g : gap) {
    if (g > 0.0) s.deficit += g;
    if (g < 0.0) s.surplus -= g;
    s.max_deficit = std::max(s.max_deficit, g);
  }
  return s;
}

void World::phase_background_upkeep() {
  // Background upkeep is driven by the lane density ledger (target - actual
  // per sidewalk fragment): growth fills the largest deficit first, trimming
  // takes from the largest surplus. Both only run when the totals differ, so
  // a city at its target pays nothing here.
  const std::uint32_t alive = background_count_;
  if (alive == pedestrian_target_) return;
  refresh_ledger_target();
  // Fragments per pedestrian are found once; trimming reuses them.
  ledger_counts(ledger_actual_, alive > pedestrian_target_ ? &fragment_of_slot_ : nullptr);
  const std::uint32_t nf = static_cast<std::uint32_t>(ledger_actual_.size());
  assert(ledger_target_.size() == nf);
  if (alive > pedestrian_target_) {
    const std::uint32_t n =
        std::min(alive - pedestrian_target_, scenario_.pedestrians.spawn_per_step_max);
    assert(fragment_of_slot_.size() == pedestrians_.size());
    [[maybe_unused]] const std::size_t requested_before = despawn_requests_.size();
    trim_background(n);
    // Trimming only asks (phase 9 removes), at most the per-step cap.
    assert(despawn_requests_.size() - requested_before <= n);
    assert(background_count_ == alive);
    return;
  }
  const std::uint32_t n =
      std::min(pedestrian_target_ - alive, scenario_.pedestrians.spawn_per_step_max);
  grow_background(n);
  // Growth adds background pedestrians, at most the per-step cap.
  assert(background_count_ >= alive);
  assert(background_count_ - alive <= n);
}

namespace {

// Fragments as a heap whose top is the largest key, the lowest index among
// equal keys (what a scan keeping the first strictly larger key finds).
using FragmentKey = std::pair<double, std::uint32_t>;
bool below(const FragmentKey& a, const FragmentKey& b) {
  return a.first != b.first ? a.first < b.first : a.second > b.second;
}

// The top fragment taken and put back with its new key.
void rekey_top(std::vector<FragmentKey>& heap, double key) {
  std::pop_heap(heap.begin(), heap.end(), below);
  heap.back().first = key;
  std::push_heap(heap.begin(), heap.end(), below);
}

}  // namespace

void World::trim_background(std::uint32_t n) {
  // Each trim takes, from the fragment with the largest surplus (actual -
  // target; the lowest index among equals) that still has background
  // pedestrians, its candidate (background, not yet asked to leave) that
  // goes first: Coarse (off-screen) before others, then the highest
  // EntityId, so the choice depends on state only, never on storage order.
  // Once no fragment holds one, the candidates on no fragment (crossings)
  // follow in the same order. Which fragment each trim takes from depends
  // on the counts alone until one runs out of candidates (where trimming
  // stops), so the plan comes first, from a heap of the fragments; then one
  // pass gathers the candidates of the fragments the plan touches, grouped
  // by fragment and ordered. A trim of a few costs about one pass over the
  // rows, a trim of many not one pass per trim.
  const auto nf = static_cast<std::uint32_t>(ledger_actual_.size());
  std::vector<FragmentKey>& heap = ledger_gaps_;
  heap.clear();
  for (std::uint32_t f = 0; f < nf; ++f)
    if (ledger_actual_[f] > 0) heap.emplace_back(ledger_actual_[f] - ledger_target_[f], f);
  std::make_heap(heap.begin(), heap.end(), below);
  trim_plan_.clear();  // per trim, its fragment (nf: no fragment)
  for (std::uint32_t k = 0; k < n; ++k) {
    if (heap.empty()) {
      trim_plan_.push_back(nf);
      continue;
    }
    const std::uint32_t worst = heap.front().second;
    trim_plan_.push_back(worst);
    --ledger_actual_[worst];
    if (ledger_actual_[worst] > 0) {
      rekey_top(heap, ledger_actual_[worst] - ledger_target_[worst]);
    } else {
      std::pop_heap(heap.begin(), heap.end(), below);
      heap.pop_back();
    }
  }
  // The candidates of the planned fragments, grouped by fragment (group nf:
  // those on no fragment), each group in the order trims take them.
  const auto group = [&](std::uint32_t i) {
    return fragment_of_slot_[i] == LaneGraph::kNoFragment ? nf : fragment_of_slot_[i];
  };
  trim_touched_.assign(std::size_t{nf} + 1, 0);
  for (const std::uint32_t f : trim_plan_) trim_touched_[f] = 1;
  // Each as (group << 32 | row), so the sort compares groups without a look-up.
  trim_rows_.clear();
  for (std::uint32_t i = 0; i < pedestrians_.size(); ++i) {
    const std::uint32_t g = group(i);
    if (trim_touched_[g] != 0 &&
        pedestrians_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background) &&
        despawn_pending_[pedestrians_.id[i].index] == 0)
      trim_rows_.push_back(std::uint64_t{g} << 32 | i);
  }
  std::sort(trim_rows_.begin(), trim_rows_.end(), [&](std::uint64_t ka, std::uint64_t kb) {
    if (ka >> 32 != kb >> 32) return ka >> 32 < kb >> 32;
    const auto a = static_cast<std::uint32_t>(ka), b = static_cast<std::uint32_t>(kb);
    const bool ca = pedestrians_.sim_tier[a] == SimTier::Coarse;
    const bool cb = pedestrians_.sim_tier[b] == SimTier::Coarse;
    return ca != cb ? ca : pedestrians_.id[b] < pedestrians_.id[a];
  });
  // Per group, its next candidate: its first, then one on per trim.
  trim_next_.assign(std::size_t{nf} + 2, 0);
  for (const std::uint64_t k : trim_rows_) ++trim_next_[(k >> 32) + 1];
  for (std::uint32_t f = 0; f <= nf; ++f) trim_next_[f + 1] += trim_next_[f];
  for (const std::uint32_t f : trim_plan_) {
    std::uint32_t& at = trim_next_[f];
    if (at == trim_rows_.size() || trim_rows_[at] >> 32 != f) break;  // all leave already
    const auto row = static_cast<std::uint32_t>(trim_rows_[at++]);
    request_despawn(pedestrians_.id[row], DespawnReason::Overpopulated);
  }
}

void World::grow_background(std::uint32_t n) {
  // Each spawn goes to the open fragment with the largest gap (target -
  // actual), the lowest index among equal gaps. The fragments wait in a heap
  // ordered so, each taken and put back with its new gap: a city filled in
  // one step (a million spawns over thousands of fragments) costs n log
  // fragments, not n x fragments, and takes the same fragments in the same
  // order as a scan would.
  std::vector<FragmentKey>& heap = ledger_gaps_;
  heap.clear();
  const std::uint32_t nf = static_cast<std::uint32_t>(ledger_actual_.size());
  for (std::uint32_t f = 0; f < nf; ++f) {
    // Spawns avoid closed lanes (commands/set_lane_closed.cpp).
    if (!closed_lanes_.empty() && lane_closed_[lanes_.fragments()[f].lane] != 0) continue;
    if (leaves_district(lanes_.fragments()[f].lane)) continue;  // another district's
    heap.emplace_back(ledger_target_[f] - ledger_actual_[f], f);
  }
  std::make_heap(heap.begin(), heap.end(), below);
  for (std::uint32_t k = 0; k < n; ++k) {
    if (heap.empty()) {
      if (nf != 0) ++lane_closure_.spawns_deferred_total;  // every sidewalk closed
      break;
    }
    const std::uint32_t best = heap.front().second;
    if (!spawn_pedestrian(best)) break;
    ++ledger_actual_[best];
    rekey_top(heap, ledger_target_[best] - ledger_actual_[best]);
  }
}

bool World::spawn_pedestrian(std::uint32_t fragment) {
  const AllocateResult a = registry_.allocate();
  if (a.status != AllocateStatus::Allocated) {
    ++counters_.spawn_failed_capacity;
    return false;
  }
  assert(fragment < lanes_.fragments().size());
  const LaneFragment& f = lanes_.fragments()[fragment];
  const double s = f.start_m + rng_.next_unit() * f.length_m;
  push_pedestrian(a.id, f.lane, s, PedestrianStore::kNoResident, PriorityClass::Background,
                  PedestrianOrigin::Background);
  ++counters_.spawned_total;
  return true;
}

}  // namespace bustle::core
