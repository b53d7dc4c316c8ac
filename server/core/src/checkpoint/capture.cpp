// Capturing a checkpoint: the capacity a checkpoint reserves, its columns'
// sizes, and capture_into, which copies the large columns in parts on the
// lent executor (only the chunks written since the last capture) and the
// rest on the sim thread.
#include <algorithm>
#include <cassert>
#include <vector>

#include "../world_internal.hpp"
#include "bustle/core/column_copies.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

namespace {
// Capacity for n elements with every page written once. The vector is left
// holding n zeros, so the capture that fills it shrinks it (free) rather
// than growing it (a zero-fill of every element on the sim thread).
template <class T>
void reserve_touched(std::vector<T>& v, std::size_t n) {
  v.resize(std::max(n, v.size()));
}
}  // namespace

void reserve_for_capture(WorldCheckpoint& cp, std::uint32_t entity_capacity) {
  cp.capture_stamp.reset();  // the columns are zeros now, no capture
  PedestrianState& p = cp.pedestrians;
  reserve_touched(p.id, entity_capacity);
  reserve_touched(p.lane, entity_capacity);
  reserve_touched(p.s_m, entity_capacity);
  reserve_touched(p.hops, entity_capacity);
  reserve_touched(p.resident, entity_capacity);
  reserve_touched(p.sim_tier, entity_capacity);
  reserve_touched(p.catch_up_steps, entity_capacity);
  reserve_touched(p.priority, entity_capacity);
  reserve_touched(p.origin, entity_capacity);
  reserve_touched(p.route, entity_capacity);
  reserve_touched(cp.registry.generation, entity_capacity);
  reserve_touched(cp.registry.alive, entity_capacity);
  reserve_touched(cp.registry.free_fifo, entity_capacity);
  reserve_touched(cp.vehicles.store.dense_of, entity_capacity);
}

std::vector<CaptureColumnBytes> World::capture_bytes(const WorldCheckpoint& into) const {
  const std::uint64_t held =
      into.capture_stamp.lineage == capture_lineage_ ? into.capture_stamp.epoch : 0;
  std::vector<CaptureColumnBytes> out;
  // `rows` rows of `row_bytes`, of which the chunks `written` stamped after
  // `held` are copied (all when nothing is held or no stamps apply).
  auto add = [&](const char* name, std::size_t rows, std::size_t row_bytes,
                 const RowWriteStamps* written) {
    const std::size_t copied_rows =
        held == 0 || written == nullptr
            ? rows
            : written->rows_written_after(static_cast<std::uint32_t>(rows), held);
    out.push_back({name, rows * row_bytes, copied_rows * row_bytes});
  };
  const std::uint32_t cap = registry_.capacity();
  add("registry.generation", cap, sizeof(std::uint32_t), &registry_.slots_written());
  add("registry.alive", cap, sizeof(std::uint8_t), &registry_.slots_written());
  add("registry.free_fifo", registry_.free_count(), sizeof(std::uint32_t), nullptr);
  const std::uint32_t n = pedestrians_.size();
  add("pedestrians.id", n, sizeof(EntityId), &pedestrian_rows_written_);
  add("pedestrians.lane", n, sizeof(LaneIndex), &pedestrian_lanes_written_);
  add("pedestrians.s_m", n, sizeof(double), nullptr);
  add("pedestrians.hops", n, sizeof(std::uint32_t), &pedestrian_lanes_written_);
  add("pedestrians.resident", n, sizeof(std::uint32_t), &pedestrian_rows_written_);
  add("pedestrians.sim_tier", n, sizeof(SimTier), &pedestrian_tiers_written_);
  add("pedestrians.catch_up_steps", n, sizeof(std::int8_t), &pedestrian_tiers_written_);
  add("pedestrians.priority", n, sizeof(std::uint8_t), &pedestrian_rows_written_);
  add("pedestrians.origin", n, sizeof(std::uint8_t), &pedestrian_rows_written_);
  add("pedestrians.route", n, sizeof(std::uint32_t), &pedestrian_lanes_written_);
  const ResidentStore& rs = population_.residents();
  const RowWriteStamps* rw = &population_.resident_rows_written();
  const std::size_t resident_row_bytes = sizeof(EntityId) + 3 * sizeof(std::uint32_t) +
                                         sizeof(std::uint8_t) + 2 * sizeof(std::int32_t);
  add("residents (7 columns)", rs.size(), resident_row_bytes, rw);
  return out;
}

WorldCheckpoint World::capture() const {
  WorldCheckpoint c;
  capture_into(c);
  return c;
}

// The resident index is derived (population_.resident_of, fixed for an
// identity's life), but checkpoints keep the column; it is filled in row
// parts, for the chunks whose id or origin was written since `held` (all of
// them when held is 0).
void World::capture_resident_column(PedestrianState& p, PhaseExecutor& parts,
                                    std::uint64_t held) const {
  const std::uint32_t n = pedestrians_.size();
  p.resident.resize(n);
  run_parts(parts, parts_for_rows(n), [&](std::uint32_t part) {
    const std::uint32_t end = std::min(n, (part + 1) * kRowsPerPart);
    for (std::uint32_t first = part * kRowsPerPart; first < end;
         first += RowWriteStamps::kRowsPerChunk) {
      if (held != 0 && !pedestrian_rows_written_.written_after(
                           first >> RowWriteStamps::kRowsPerChunkLog2, held)) {
        continue;
      }
      const std::uint32_t last = std::min(end, first + RowWriteStamps::kRowsPerChunk);
      for (std::uint32_t i = first; i < last; ++i) {
        const std::int32_t r =
            pedestrians_.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)
                ? population_.resident_of(pedestrians_.id[i])
                : ResidentStore::kNone;
        p.resident[i] = r == ResidentStore::kNone ? PedestrianStore::kNoResident
                                                  : static_cast<std::uint32_t>(r);
      }
    }
  });
}

// After a capture: every write from now on is stamped with the next epoch.
void World::start_next_capture_epoch() const {
  ++capture_epoch_;
  pedestrian_rows_written_.start_epoch(capture_epoch_);
  pedestrian_lanes_written_.start_epoch(capture_epoch_);
  pedestrian_tiers_written_.start_epoch(capture_epoch_);
  registry_.slots_written().start_epoch(capture_epoch_);
  population_.resident_rows_written().start_epoch(capture_epoch_);
}

// The large columns (pedestrians, registry slots, residents) are queued on a
// ColumnCopies and copied in fixed parts on the lent executor, together with
// the derived resident column; everything else is small and copied here.
// Into a checkpoint that holds an earlier capture of this world (its
// capture_stamp), the row columns copy only the chunks written since
// (row_write_stamps.hpp): the bytes are those of a full capture.
void World::capture_into(WorldCheckpoint& c) const {
  const std::uint64_t held =
      c.capture_stamp.lineage == capture_lineage_ ? c.capture_stamp.epoch : 0;
  assert(held < capture_epoch_);
  c.scenario_id = scenario_.id;
  c.step_us = scenario_.step_us;
  c.seed = seed_;
  c.step_index = step_index_;
  c.rng_state = rng_.state();
  c.route_salt = route_salt_;
  c.pedestrian_target = pedestrian_target_;
  ColumnCopies copies;
  registry_.export_state(c.registry.generation, c.registry.alive, c.registry.free_fifo,
                         c.registry.pop_seq, copies, held);
  PedestrianState& p = c.pedestrians;
  copies.add_written(p.id, pedestrians_.id, pedestrian_rows_written_, held);
  copies.add_written(p.lane, pedestrians_.lane, pedestrian_lanes_written_, held);
  copies.add_column(p.s_m, pedestrians_.s_m);  // every moving row, every step
  copies.add_written(p.hops, pedestrians_.hops, pedestrian_lanes_written_, held);
  copies.add_written(p.sim_tier, pedestrians_.sim_tier, pedestrian_tiers_written_, held);
  copies.add_written(p.catch_up_steps, pedestrians_.catch_up_steps, pedestrian_tiers_written_,
                     held);
  copies.add_written(p.priority, pedestrians_.priority, pedestrian_rows_written_, held);
  copies.add_written(p.origin, pedestrians_.origin, pedestrian_rows_written_, held);
  copies.add_written(p.route, pedestrians_.route, pedestrian_lanes_written_, held);
  population_.capture_into(c.population, copies, held);
  InlineExecutor inline_parts;
  PhaseExecutor& parts = lent_executor_ != nullptr ? *lent_executor_ : inline_parts;
  copies.run(parts);
  capture_resident_column(c.pedestrians, parts, held);
  // The checkpoint now holds this epoch; later writes stamp the next one.
  c.capture_stamp = CaptureStamp{capture_lineage_, capture_epoch_};
  start_next_capture_epoch();
  c.routes = routes_.state();
  c.pedestrian_tiers = pedestrian_tier_counts_;
  c.forced_full = forced_full_;
  c.admission_masked = admission_masked_;
  c.prevention = prevention_;
  c.closed_lanes = closed_lanes_;
  c.lane_waiters = lane_waiters_;
  c.lane_closure = lane_closure_;
  c.force_full_refused = force_full_refused_;
  c.counters.spawned_total = counters_.spawned_total;
  c.counters.despawned_total = counters_.despawned_total;
  for (std::size_t r = 0; r < kDespawnReasonCount; ++r) {
    c.counters.despawned_by_reason[r] = counters_.despawned_by_reason[r];
  }
  c.counters.spawn_failed_capacity = counters_.spawn_failed_capacity;
  c.counters.commands_accepted = counters_.commands_accepted;
  c.counters.commands_rejected = counters_.commands_rejected;
  c.counters.faded_total = counters_.faded_total;
  c.counters.fade_skipped_total = counters_.fade_skipped_total;
  vehicles_.capture_into(c.vehicles);
  c.observers = observers_;
  c.observer_views = observer_views_;
  c.follow = follow_;
  c.follow_first_vehicle = follow_first_vehicle_;
  c.client_observers = client_observers_;
  c.client_observer_views = client_observer_views_;
  c.spawn = spawn_;
  c.orphans.clear();
  for (const OrphanRecord& o : orphans_) {
    c.orphans.push_back(
        {o.id, static_cast<std::uint8_t>(o.reason), o.lane, o.s_m, o.resident, o.release_step});
  }
  c.retiring_fifo = retiring_fifo_;
  c.inbox.clear();
  for (std::size_t k = 0; k < inbox_count_; ++k)
    c.inbox.push_back(inbox_[(inbox_head_ + k) % inbox_.size()]);
  // The digest of exactly this state, so restore can prove it rebuilt it.
  // Between steps only submit() and take_inbox() change the state, and the
  // inbox is empty after every step, so with an empty inbox the post-step
  // digest is still exact and the O(entities) rehash is skipped (it would
  // dominate the sim thread's share of a checkpoint).
  c.digest = inbox_count_ == 0 ? digest_ : compute_digest();
}

}  // namespace bustle::core
