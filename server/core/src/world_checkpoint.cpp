// The checkpoint half of the World: capture, restore and saves.
//
// Sections, in file order: restore's lifecycle checks (observers, spawn
// handles, routes, orphans); capture and capture_into; restore() and its
// sections (pedestrians row by row, identities and vehicles, observers and
// ForceFull, clock and counters), which validate everything before a
// candidate world is returned and compare the digest last; capture_save,
// place_saved_active_set and load_save (persistent facts only).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "bustle/core/column_copies.hpp"
#include "bustle/core/world.hpp"
#include "world_internal.hpp"

namespace bustle::core {
namespace {

constexpr std::size_t kMaxReportedErrors = 32;

std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xF];
  return out;
}

}  // namespace

// Restore's error list: each failure names the checkpoint path; at most
// kMaxReportedErrors are kept.
struct World::RestoreFailures {
  std::vector<RestoreError>& errors;
  void operator()(std::string path, std::string message) {
    if (errors.size() < kMaxReportedErrors) errors.push_back({std::move(path), std::move(message)});
  }
  bool any() const { return !errors.empty(); }
};

// Both observer sets: finite, one view per point, the clients' set bounded.
void World::restore_check_observers(const WorldCheckpoint& cp, RestoreFailures& fail) {
  if (!cp.observer_views.empty() && cp.observer_views.size() != cp.observers.size()) {
    fail("observer_views", "one view per observer is required");
  }
  for (std::size_t i = 0; i < cp.observer_views.size(); ++i) {
    const ObserverView& v = cp.observer_views[i];
    if (!std::isfinite(v.z_m) || !std::isfinite(v.heading_rad))
      fail("observer_views[" + std::to_string(i) + "]", "must be finite");
  }
  if (cp.client_observers.size() > kClientObserversMax) {
    fail("client_observers",
         "more than " + std::to_string(kClientObserversMax) + " client observers");
  }
  if (cp.client_observer_views.size() != cp.client_observers.size()) {
    fail("client_observer_views", "one view per client observer is required");
  }
  for (std::size_t i = 0; i < cp.client_observers.size(); ++i) {
    const Vec2 o = cp.client_observers[i];
    const ObserverView v =
        i < cp.client_observer_views.size() ? cp.client_observer_views[i] : ObserverView{};
    if (!std::isfinite(o.x_m) || !std::isfinite(o.y_m) || !std::isfinite(v.z_m) ||
        !std::isfinite(v.heading_rad)) {
      fail("client_observers[" + std::to_string(i) + "]", "must be finite");
    }
  }
}

// The spawn handles, live and recent.
void World::restore_spawn_handles(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const SpawnPipelineState& sp = cp.spawn;
  auto check_handle = [&](const SpawnHandleState& h, const std::string& row, bool live) {
    if (h.handle == 0 || h.handle >= sp.next_handle)
      fail(row + ".handle", "must be in [1, next_handle)");
    if (static_cast<std::size_t>(h.state) >= kSpawnStateCount)
      fail(row + ".state", "unknown spawn state");
    // Since schema 3 the core's part of a handle ends at RepresentationRequested
    // (spawn_pipeline.hpp); a checkpoint holding a live handle in a
    // representation stage, or Attached / ReadyForGameplay at all, predates
    // that and cannot be continued exactly.
    if (h.state == SpawnState::Attached || h.state == SpawnState::ReadyForGameplay) {
      fail(row + ".state",
           std::string(to_string(h.state)) +
               " is a representation stage, not core state (a checkpoint from before schema 3)");
    } else if (live == is_core_terminal(h.state)) {
      fail(row + ".state", live ? "a live handle cannot be core-terminal (representation_requested "
                                  "ends the core's part)"
                                : "must be core-terminal");
    }
    if (static_cast<std::uint8_t>(h.failure) > static_cast<std::uint8_t>(kSpawnFailureLast))
      fail(row + ".failure", "unknown");
    if (h.zone != kAnyZone &&
        (h.zone < 0 || static_cast<std::size_t>(h.zone) >= w.scenario_.zones.size()))
      fail(row + ".zone", "unknown zone");
    if (h.lane != kAnyLane && h.lane >= nlanes) fail(row + ".lane", "unknown lane");
    if (static_cast<std::size_t>(h.priority) >= kPriorityClassCount)
      fail(row + ".priority", "unknown priority class");
    if (live && h.state != SpawnState::Queued && !w.registry_.is_alive(h.entity))
      fail(row + ".entity", "identity is not alive");
  };
  for (std::size_t k = 0; k < sp.live.size(); ++k) {
    const std::string row = "spawn.live[" + std::to_string(k) + "]";
    check_handle(sp.live[k], row, true);
    if (k > 0 && sp.live[k - 1].handle >= sp.live[k].handle)
      fail(row + ".handle", "not sorted or duplicated");
    const SpawnState st = sp.live[k].state;
    const bool registered = st >= SpawnState::Registered;
    const EntityId id = sp.live[k].entity;
    if (registered && w.registry_.is_alive(id) &&
        (w.pedestrians_.dense_of[id.index] == PedestrianStore::kNoSlot ||
         w.pedestrians_.origin[w.pedestrians_.dense_of[id.index]] !=
             static_cast<std::uint8_t>(PedestrianOrigin::Spawned))) {
      fail(row + ".entity", "a registered spawn must be an active spawned pedestrian");
    }
  }
  if (sp.recent.size() > kSpawnHistory)
    fail("spawn.recent", "more than " + std::to_string(kSpawnHistory) + " entries");
  for (std::size_t k = 0; k < sp.recent.size(); ++k)
    check_handle(sp.recent[k], "spawn.recent[" + std::to_string(k) + "]", false);
  if (sp.live.size() > w.scenario_.spawn.queue_depth)
    fail("spawn.live", "more live handles than spawn.queue_depth");
  w.spawn_ = sp;
}

// The route table: consistent, and every live route held by exactly one
// walker or one live spawn handle; false when it is not consistent.
bool World::restore_routes(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const SpawnPipelineState& sp = cp.spawn;
  if (std::string why = RouteTable::validate(cp.routes, static_cast<std::uint32_t>(nlanes));
      !why.empty()) {
    fail(why.substr(0, why.find(':')), why.substr(why.find(':') + 2));
    return false;
  }
  std::vector<std::uint8_t> held(cp.routes.count.size(), 0);
  auto hold = [&](std::uint32_t slot, const std::string& row) {
    if (slot == kNoRoute) return;
    if (slot >= held.size() || cp.routes.count[slot] == 0) {
      fail(row, "route slot " + std::to_string(slot) + " is not a live route");
    } else if (held[slot]++ != 0) {
      fail(row, "route slot " + std::to_string(slot) + " is held twice");
    }
  };
  for (std::size_t i = 0; i < w.pedestrians_.size(); ++i)
    hold(w.pedestrians_.route[i], "pedestrians[" + std::to_string(i) + "].route");
  for (std::size_t k = 0; k < sp.live.size(); ++k)
    hold(sp.live[k].route, "spawn.live[" + std::to_string(k) + "].route");
  for (std::size_t k = 0; k < sp.recent.size(); ++k) {
    if (sp.recent[k].route != kNoRoute)
      fail("spawn.recent[" + std::to_string(k) + "].route", "an ended handle holds no route");
  }
  for (std::size_t slot = 0; slot < held.size(); ++slot) {
    if (cp.routes.count[slot] != 0 && held[slot] == 0)
      fail("routes[" + std::to_string(slot) + "]", "live route held by nobody");
  }
  w.routes_.set_state(cp.routes);
  return true;
}

// The orphan set (sorted by id) and the retiring FIFO over it.
void World::restore_orphans(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const std::size_t nlanes = w.lanes_.size();
  const ResidentStore& rs = w.population_.residents();
  for (std::size_t k = 0; k < cp.orphans.size(); ++k) {
    const OrphanState& o = cp.orphans[k];
    const std::string row = "orphans[" + std::to_string(k) + "]";
    if (!w.registry_.is_alive(o.id))
      fail(row + ".id", "identity is not alive");
    else if (w.pedestrians_.dense_of[o.id.index] != PedestrianStore::kNoSlot)
      fail(row + ".id", "also an active pedestrian");
    if (k > 0 && !(cp.orphans[k - 1].id < o.id))
      fail(row + ".id", "not sorted by id or duplicated");
    if (!is_despawn_reason(o.reason)) fail(row + ".reason", "unknown despawn reason");
    if (o.lane >= nlanes) {
      fail(row + ".lane", "unknown lane");
    } else if (!std::isfinite(o.s_m) || o.s_m < 0.0 || o.s_m > w.lanes_.lane(o.lane).length_m) {
      fail(row + ".s_m", "outside the lane");
    }
    if (o.resident != UINT32_MAX && (o.resident >= rs.size() || !(rs.id[o.resident] == o.id) ||
                                     (rs.active[o.resident] != ResidentStore::kRetiring &&
                                      rs.active[o.resident] != ResidentStore::kDeceased))) {
      fail(row + ".resident", "does not match a retiring or deceased resident with this identity");
    }
    w.orphans_.push_back(
        {o.id, static_cast<DespawnReason>(o.reason), o.lane, o.s_m, o.resident, o.release_step});
  }
  if (cp.retiring_fifo.size() != cp.orphans.size())
    fail("retiring_fifo", "must list every orphan once");
  for (std::size_t k = 0; k < cp.retiring_fifo.size(); ++k) {
    const std::string row = "retiring_fifo[" + std::to_string(k) + "]";
    auto o = std::lower_bound(w.orphans_.begin(), w.orphans_.end(), cp.retiring_fifo[k],
                              [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    if (o == w.orphans_.end() || !(o->id == cp.retiring_fifo[k])) {
      fail(row, "not in the orphan set");
      continue;
    }
    auto prev =
        k == 0 ? w.orphans_.end()
               : std::lower_bound(w.orphans_.begin(), w.orphans_.end(), cp.retiring_fifo[k - 1],
                                  [](const OrphanRecord& r, EntityId v) { return r.id < v; });
    if (prev != w.orphans_.end() && prev->id == cp.retiring_fifo[k - 1] &&
        prev->release_step > o->release_step) {
      fail(row, "release steps must not decrease along the FIFO");
    }
  }
  w.retiring_fifo_ = cp.retiring_fifo;
}

// The lifecycle state restore() checks after the pedestrians: observers,
// spawn handles, routes, orphans.
void World::restore_lifecycle(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  restore_check_observers(cp, fail);
  restore_spawn_handles(w, cp, fail);
  if (!restore_routes(w, cp, fail)) return;
  restore_orphans(w, cp, fail);
}

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

World::RestoreResult World::restore(const Scenario& scenario, const WorldCheckpoint& cp,
                                    LogSink* log) {
  RestoreResult result;
  RestoreFailures fail{result.errors};
  for (ScenarioError& e : validate_scenario(scenario)) fail("scenario." + e.path, e.message);
  if (fail.any()) return result;
  if (cp.scenario_id != scenario.id) {
    fail("scenario_id",
         "checkpoint is of scenario '" + cp.scenario_id + "', not '" + scenario.id + "'");
  }
  if (cp.step_us != scenario.step_us) {
    fail("step_us", "checkpoint steps " + std::to_string(cp.step_us) + " us, scenario " +
                        std::to_string(scenario.step_us) + " us");
  }
  if (fail.any()) return result;

  std::unique_ptr<World> w(new World(scenario, cp.seed, log));
  if (std::string err = w->registry_.import_state(cp.registry.generation, cp.registry.alive,
                                                  cp.registry.free_fifo, cp.registry.pop_seq);
      !err.empty()) {
    fail("registry." + err.substr(0, err.find(':')), err.substr(err.find(':') + 2));
    return result;
  }
  std::size_t spawned_pedestrians = 0;
  if (!restore_pedestrians(*w, cp, fail, spawned_pedestrians)) return result;
  restore_lifecycle(*w, cp, fail);
  if (cp.pedestrian_target > scenario.entity_capacity) {
    fail("pedestrian_target", std::to_string(cp.pedestrian_target) + " exceeds entity_capacity " +
                                  std::to_string(scenario.entity_capacity));
  }
  if (cp.inbox.size() > w->inbox_.size()) {
    fail("inbox", std::to_string(cp.inbox.size()) + " pending commands exceed the inbox capacity " +
                      std::to_string(w->inbox_.size()));
  }
  for (std::size_t i = 0; i < cp.observers.size(); ++i) {
    if (!std::isfinite(cp.observers[i].x_m) || !std::isfinite(cp.observers[i].y_m)) {
      fail("observers[" + std::to_string(i) + "]", "coordinates must be finite");
    }
  }
  if (fail.any()) return result;
  if (!restore_identities_and_vehicles(*w, cp, spawned_pedestrians, fail)) return result;
  if (!restore_observers_and_forced(*w, cp, fail)) return result;
  restore_prevention(*w, cp, fail);
  if (fail.any()) return result;
  if (std::optional<RestoreError> e = w->restore_lane_closures(cp)) {
    fail(std::move(e->path), std::move(e->message));
    return result;
  }
  w->restore_clock_and_counters(cp);

  // Last line of defence: a value that passed every range check but differs
  // from what was captured (a flipped bit in a distance, a counter) changes
  // the digest.
  w->pedestrian_digest_sum_ = w->pedestrian_digest_sum_recount();  // derived: rebuilt, never stored
  w->digest_ = w->compute_digest();
  if (w->digest_ != cp.digest) {
    fail("digest", "stored " + hex(cp.digest) + " but the restored state hashes to " +
                       hex(w->digest_) + " (the snapshot was altered or is from another build)");
    return result;
  }
  result.world = std::move(w);
  return result;
}

// The pedestrian rows, after the residents (their identities are alive
// whether active or dormant); false when restore must stop here.
bool World::restore_pedestrians(World& w, const WorldCheckpoint& cp, RestoreFailures& fail,
                                std::size_t& spawned_pedestrians) {
  const PedestrianState& p = cp.pedestrians;
  const std::size_t n = p.id.size();
  if (p.lane.size() != n || p.s_m.size() != n || p.hops.size() != n || p.resident.size() != n ||
      p.sim_tier.size() != n || p.catch_up_steps.size() != n || p.priority.size() != n ||
      p.origin.size() != n || p.route.size() != n) {
    fail("pedestrians",
         "column lengths differ (id " + std::to_string(n) + ", lane " +
             std::to_string(p.lane.size()) + ", s_m " + std::to_string(p.s_m.size()) + ", hops " +
             std::to_string(p.hops.size()) + ", resident " + std::to_string(p.resident.size()) +
             ", tier " + std::to_string(p.sim_tier.size()) + ", catch_up_steps " +
             std::to_string(p.catch_up_steps.size()) + ", priority " +
             std::to_string(p.priority.size()) + ", origin " + std::to_string(p.origin.size()) +
             ")");
    return false;
  }
  for (auto& [path, message] : w.population_.restore(cp.population, w.registry_))
    fail(path, message);
  if (fail.any()) return false;
  for (std::size_t i = 0; i < n; ++i) restore_pedestrian_row(w, p, i, cp.step_index, fail);
  // A failed row leaves the store partial (its columns of unequal length).
  if (fail.any()) return true;
  std::size_t resident_pedestrians = 0;
  spawned_pedestrians = 0;
  const PopulationSystem& population = w.population_;
  for (std::uint32_t i = 0; i < w.pedestrians_.size(); ++i) {
    const std::uint8_t o = w.pedestrians_.origin[i];
    // A deceased resident's corpse is not one of the active members.
    resident_pedestrians += o == static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
                            !population.is_deceased(w.pedestrians_.id[i]);
    spawned_pedestrians += o == static_cast<std::uint8_t>(PedestrianOrigin::Spawned);
  }
  if (resident_pedestrians + population.retiring_count() != population.active_count()) {
    fail("residents.active", std::to_string(population.active_count()) + " active residents but " +
                                 std::to_string(resident_pedestrians) +
                                 " resident pedestrians and " +
                                 std::to_string(population.retiring_count()) + " retiring");
  }
  return true;
}

// One checkpoint row, validated and appended (a row failing after its
// position was appended leaves the store partial; restore then fails).
void World::restore_pedestrian_row(World& w, const PedestrianState& p, std::size_t i,
                                   std::uint64_t step, RestoreFailures& fail) {
  const std::string row = "pedestrians[" + std::to_string(i) + "]";
  const EntityId id = p.id[i];
  PedestrianStore& peds = w.pedestrians_;
  if (!w.registry_.is_alive(id)) {
    fail(row + ".id", "entity " + id_text(id) + " is not alive in the registry");
    return;
  }
  if (peds.dense_of[id.index] != PedestrianStore::kNoSlot) {
    fail(row + ".id", "duplicate entity " + id_text(id) + " (also row " +
                          std::to_string(peds.dense_of[id.index]) + ")");
    return;
  }
  if (p.lane[i] >= w.lanes_.size()) {
    fail(row + ".lane", "lane " + std::to_string(p.lane[i]) + " does not exist (scenario has " +
                            std::to_string(w.lanes_.size()) + " lanes)");
    return;
  }
  const Lane& lane = w.lanes_.lane(p.lane[i]);
  if (!is_pedestrian_lane(lane.kind)) {
    fail(row + ".lane", "lane '" + lane.id + "' is not walkable");
    return;
  }
  if (!std::isfinite(p.s_m[i]) || p.s_m[i] < 0.0 || p.s_m[i] > lane.length_m) {
    fail(row + ".s_m", "distance " + std::to_string(p.s_m[i]) + " outside lane '" + lane.id +
                           "' [0, " + std::to_string(lane.length_m) + "]");
    return;
  }
  if (p.priority[i] >= kPriorityClassCount) {
    fail(row + ".priority", "unknown priority class " + std::to_string(p.priority[i]));
    return;
  }
  const std::uint32_t resident = p.resident[i];
  const bool has_resident = resident != PedestrianStore::kNoResident;
  if (p.origin[i] > static_cast<std::uint8_t>(PedestrianOrigin::Spawned) ||
      (p.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Resident)) != has_resident) {
    fail(row + ".origin",
         "must be 0 (background), 1 (resident, with a resident index) or 2 (spawned)");
    return;
  }
  const ResidentStore& residents = w.population_.residents();
  if (has_resident) {
    // A deceased one's row is its corpse (checked with the corpses).
    if (resident >= residents.size() || residents.id[resident] != id ||
        (residents.active[resident] != ResidentStore::kActive &&
         residents.active[resident] != ResidentStore::kDeceased)) {
      fail(row + ".resident", "does not match an active or deceased resident with this identity");
      return;
    }
  } else if (w.population_.resident_of(id) != ResidentStore::kNone) {
    fail(row + ".resident", "identity belongs to a resident but the row says background");
    return;
  }
  peds.dense_of[id.index] = static_cast<std::uint32_t>(peds.id.size());
  peds.id.push_back(id);
  peds.lane.push_back(p.lane[i]);
  peds.s_m.push_back(p.s_m[i]);
  peds.hops.push_back(p.hops[i]);
  if (tier_index(p.sim_tier[i]) >= kSimTierCount) {
    fail(row + ".tier", "unknown simulation tier " + std::to_string(tier_index(p.sim_tier[i])));
    return;
  }
  peds.sim_tier.push_back(p.sim_tier[i]);
  // Between steps no row stands ahead of the step (pedestrian invariant 5b).
  const int catch_up = p.catch_up_steps[i];
  if (catch_up < -kMaxCatchUpSteps || catch_up > kMaxCatchUpSteps) {
    fail(row + ".catch_up_steps", std::to_string(catch_up) + " is outside [" +
                                      std::to_string(-kMaxCatchUpSteps) + ", " +
                                      std::to_string(kMaxCatchUpSteps) + "]");
    return;
  }
  if (const std::uint32_t since = steps_since_due(step, id_phase(id), p.sim_tier[i]);
      static_cast<int>(since) + catch_up < 0) {
    fail(row + ".catch_up_steps", std::to_string(catch_up) +
                                      " puts the row ahead of the step (its last due step was " +
                                      std::to_string(since) + " steps ago)");
    return;
  }
  peds.catch_up_steps.push_back(static_cast<std::int8_t>(catch_up));
  peds.priority.push_back(p.priority[i]);
  peds.phase.push_back(id_phase(id));
  peds.route.push_back(p.route[i]);
  peds.capacity_tier.push_back(p.sim_tier[i]);  // derived, not saved (sim_tier.hpp)
  peds.origin.push_back(p.origin[i]);
  if (p.origin[i] == static_cast<std::uint8_t>(PedestrianOrigin::Background)) ++w.background_count_;
}

// Every alive identity is exactly one background pedestrian, one vehicle or
// one resident (active or dormant), a spawned pedestrian, a spawn's identity
// or a retiring orphan; then the vehicles. False when restore must stop.
bool World::restore_identities_and_vehicles(World& w, const WorldCheckpoint& cp,
                                            std::size_t spawned_pedestrians,
                                            RestoreFailures& fail) {
  std::size_t pending_identities = 0, non_resident_orphans = 0;
  for (const SpawnHandleState& h : w.spawn_.live)
    pending_identities += h.state == SpawnState::IdentityCreated;
  for (const OrphanRecord& o : w.orphans_) non_resident_orphans += o.resident == UINT32_MAX;
  const std::size_t vehicles = cp.vehicles.store.id.size();
  std::size_t in_mouths = 0;  // dispatched, waiting in a garage mouth: identities, on no lane
  for (const GarageState& g : cp.vehicles.garages) in_mouths += g.mouth.size();
  const std::size_t residents = w.population_.residents().size();
  const std::size_t expected_alive = w.background_count_ + vehicles + in_mouths + residents +
                                     spawned_pedestrians + pending_identities +
                                     non_resident_orphans;
  if (expected_alive != w.registry_.alive_count()) {
    fail("registry.alive", std::to_string(w.registry_.alive_count()) + " alive identities but " +
                               std::to_string(w.background_count_) + " background pedestrians, " +
                               std::to_string(vehicles) + " vehicles, " +
                               std::to_string(in_mouths) + " in garage mouths, " +
                               std::to_string(residents) + " residents, " +
                               std::to_string(spawned_pedestrians) + " spawned pedestrians, " +
                               std::to_string(pending_identities) + " spawn identities and " +
                               std::to_string(non_resident_orphans) + " retiring");
    return false;
  }
  for (std::size_t i = 0; i < vehicles; ++i) {
    const EntityId id = cp.vehicles.store.id[i];
    if (id.index < w.pedestrians_.dense_of.size() &&
        w.pedestrians_.dense_of[id.index] != PedestrianStore::kNoSlot) {
      fail("vehicles[" + std::to_string(i) + "].id", "entity is also a pedestrian");
      return false;
    }
  }
  for (std::size_t g = 0; g < cp.vehicles.garages.size(); ++g) {
    const auto& mouth = cp.vehicles.garages[g].mouth;
    for (std::size_t k = 0; k < mouth.size(); ++k) {
      const EntityId id = mouth[k].id;
      if (id.index < w.pedestrians_.dense_of.size() &&
          w.pedestrians_.dense_of[id.index] != PedestrianStore::kNoSlot) {
        fail("garages[" + std::to_string(g) + "].mouth[" + std::to_string(k) + "].id",
             "entity is also a pedestrian");
        return false;
      }
    }
  }
  for (auto& [path, message] : w.vehicles_.restore(cp.vehicles, w.registry_)) fail(path, message);
  return !fail.any();
}

// Observers (both sets), the pedestrian tier counts, the ForceFull list and
// the admission mask.
bool World::restore_observers_and_forced(World& w, const WorldCheckpoint& cp,
                                         RestoreFailures& fail) {
  w.observers_ = cp.observers;
  w.observer_views_ = cp.observer_views;
  if (!cp.follow.is_null()) {
    Vec2 at;
    if (cp.observers.size() != 1) {
      fail("follow", "an entity is followed but " + std::to_string(cp.observers.size()) +
                         " observers are set (exactly 1 follows it)");
      return false;
    }
    if (!w.entity_position(cp.follow, at)) {
      fail("follow", "followed entity " + id_text(cp.follow) + " is not alive on a lane");
      return false;
    }
  }
  if (cp.follow_first_vehicle &&
      (!cp.follow.is_null() || w.scenario_.observer_follow != ObserverFollow::FirstVehicle)) {
    fail("follow_first_vehicle",
         cp.follow.is_null()
             ? "waiting to follow the first vehicle, but the scenario's observer_follow is not "
               "'first_vehicle'"
             : "waiting to follow the first vehicle while entity " + id_text(cp.follow) +
                   " is already followed");
    return false;
  }
  w.follow_ = cp.follow;
  w.follow_first_vehicle_ = cp.follow_first_vehicle;
  w.client_observers_ = cp.client_observers;
  w.client_observer_views_ = cp.client_observer_views;
  w.refresh_tier_observers();
  w.prepare_importance();
  w.pedestrian_tier_counts_ = cp.pedestrian_tiers;
  for (std::size_t k = 0; k < cp.forced_full.size(); ++k) {
    if (!w.registry_.is_alive(cp.forced_full[k])) {
      fail("forced_full[" + std::to_string(k) + "]", "identity is not alive");
      return false;
    }
    if (k > 0 && !(cp.forced_full[k - 1] < cp.forced_full[k])) {
      fail("forced_full[" + std::to_string(k) + "]", "not sorted or duplicated");
      return false;
    }
  }
  w.forced_full_ = cp.forced_full;
  w.force_full_refused_ = cp.force_full_refused;
  if (cp.admission_masked.size() > kMaxAdmissionMasked) {
    fail("admission_masked", std::to_string(cp.admission_masked.size()) +
                                 " masked pedestrians, more than the limit of " +
                                 std::to_string(kMaxAdmissionMasked));
    return false;
  }
  for (std::size_t k = 0; k < cp.admission_masked.size(); ++k) {
    const EntityId id = cp.admission_masked[k];
    const std::string at = "admission_masked[" + std::to_string(k) + "]";
    if (k > 0 && !(cp.admission_masked[k - 1] < id)) {
      fail(at, "not sorted or duplicated");
      return false;
    }
    const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, id);
    if (slot == PedestrianStore::kNoSlot) {
      fail(at, id_text(id) + " is not a walking pedestrian");
      return false;
    }
    if (w.pedestrians_.catch_up_steps[slot] != 0) {  // a held row stands (sim_tier.hpp)
      fail(at, id_text(id) + " is masked but its row keeps a catch-up");
      return false;
    }
    // The row bit; the digest sum is recounted after this.
    w.pedestrians_.phase[slot] |= PedestrianStore::kAdmissionMaskedBit;
  }
  w.admission_masked_ = cp.admission_masked;
  return true;
}

// Response units and corpses (prevention.hpp's invariants, named by path).
void World::restore_prevention(World& w, const WorldCheckpoint& cp, RestoreFailures& fail) {
  const PreventionState& p = cp.prevention;
  const auto levels = static_cast<std::uint32_t>(w.scenario_.prevention.units_per_level.size());
  if (p.level > levels) {
    fail("prevention.level", std::to_string(p.level) + " is above the scenario's " +
                                 std::to_string(levels) + " levels");
  }
  if (p.units.size() > w.scenario_.prevention.max_units)
    fail("prevention.units", "more live units than prevention.max_units");
  for (std::size_t k = 0; k < p.units.size(); ++k) {
    const ResponseUnit& u = p.units[k];
    const std::string at = "prevention.units[" + std::to_string(k) + "]";
    if ((k > 0 && p.units[k - 1].handle >= u.handle) || u.handle == 0 || u.handle >= p.next_handle)
      fail(at + ".handle", "not sorted, duplicated or not below next_handle");
    if (u.level < 1 || u.level > levels)
      fail(at + ".level", "must be in [1, " + std::to_string(levels) + "]");
    if (u.state > ResponseUnitState::Retiring) {
      fail(at + ".state", std::string(to_string(u.state)) + " is terminal (live units only)");
    } else if ((u.state == ResponseUnitState::Queued) != u.entity.is_null()) {
      fail(at + ".entity", "a queued unit has no entity, an active or retiring one has one");
    } else if (u.level > p.level && u.state != ResponseUnitState::Retiring) {
      fail(at + ".level", "above the current level but not retiring");
    }
    if (const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, u.entity);
        !u.entity.is_null() && slot != PedestrianStore::kNoSlot &&
        w.pedestrians_.origin[slot] != static_cast<std::uint8_t>(PedestrianOrigin::Spawned)) {
      fail(at + ".entity", id_text(u.entity) + " walks but is not a spawned pedestrian");
    }
  }
  if (p.corpses.size() > kMaxCorpses) fail("prevention.corpses", "more than 4096 corpses");
  if (fail.any()) return;
  for (std::size_t k = 0; k < p.corpses.size(); ++k) {
    const EntityId id = p.corpses[k].id;
    const std::string at = "prevention.corpses[" + std::to_string(k) + "]";
    const std::uint32_t slot = walking_slot(w.registry_, w.pedestrians_, id);
    if (k > 0 && !(p.corpses[k - 1].id < id)) {
      fail(at, "not sorted or duplicated");
    } else if (slot == PedestrianStore::kNoSlot) {
      fail(at, id_text(id) + " is not a walking pedestrian");
    } else if (w.pedestrians_.origin[slot] ==
                   static_cast<std::uint8_t>(PedestrianOrigin::Resident) &&
               !w.population_.is_deceased(id)) {
      fail(at, id_text(id) + " is a resident that is not deceased");
    } else if (w.is_admission_masked(id)) {
      fail(at, id_text(id) + " is also in admission_masked");
    } else if (p.corpses[k].death_step > cp.step_index) {
      fail(at + ".death_step", "after the checkpoint's step");
    } else if (w.pedestrians_.catch_up_steps[slot] != 0) {
      fail(at, id_text(id) + " is a corpse but its row keeps a catch-up");
    } else {
      // The held bit; the digest sum is recounted after this.
      w.pedestrians_.phase[slot] |= PedestrianStore::kAdmissionMaskedBit;
      continue;
    }
    return;
  }
  // And the other way: a deceased resident's row is its corpse.
  for (std::uint32_t i = 0; i < w.pedestrians_.size(); ++i) {
    const std::int32_t r = w.population_.resident_of(w.pedestrians_.id[i]);
    if (w.population_.is_deceased(w.pedestrians_.id[i]) &&
        !std::binary_search(
            p.corpses.begin(), p.corpses.end(), CorpseRecord{w.pedestrians_.id[i], 0},
            [](const CorpseRecord& a, const CorpseRecord& b) { return a.id < b.id; })) {
      fail("pedestrians[" + std::to_string(i) + "]",
           "resident " + std::to_string(r) + " is deceased but its row is not a corpse");
      return;
    }
  }
  w.prevention_ = p;
}

// The pending commands, the clock, the PRNG and the counters (nothing here
// can fail: the ranges were checked above).
void World::restore_clock_and_counters(const WorldCheckpoint& cp) {
  for (const CommandEnvelope& env : cp.inbox) submit(env);
  step_index_ = cp.step_index;
  rng_.set_state(cp.rng_state);
  route_salt_ = cp.route_salt;
  pedestrian_target_ = cp.pedestrian_target;
  counters_.spawned_total = cp.counters.spawned_total;
  counters_.despawned_total = cp.counters.despawned_total;
  for (std::size_t r = 0; r < kDespawnReasonCount; ++r) {
    counters_.despawned_by_reason[r] = cp.counters.despawned_by_reason[r];
  }
  counters_.spawn_failed_capacity = cp.counters.spawn_failed_capacity;
  counters_.commands_accepted = cp.counters.commands_accepted;
  counters_.commands_rejected = cp.counters.commands_rejected;
  counters_.faded_total = cp.counters.faded_total;
  counters_.fade_skipped_total = cp.counters.fade_skipped_total;
}

SaveState World::capture_save() const {  // NOLINT
  SaveState s{scenario_.id,
              scenario_.step_us,
              seed_,
              step_index_,
              pedestrian_target_,
              population_.day_us(),
              population_.time_scale(),
              {},
              {},
              {},
              {},
              population_.settings(),
              {},
              false,
              {}};
  for (const GarageState& g : vehicles_.garages())
    s.garage_vehicle_ordinals.push_back(g.next_vehicle_ordinal);
  const ResidentStore& rs = population_.residents();
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    if (!scenario_.communities[rs.community[i]].saveable) continue;
    s.saveable_ids.push_back(rs.id[i]);
    s.saveable_zones.push_back(scenario_.zones[rs.zone[i]].id);
    s.saveable_deceased.push_back(rs.active[i] == ResidentStore::kDeceased ? 1 : 0);
  }
  for (std::uint32_t i = 0; i < rs.size(); ++i) {
    if (rs.active[i] != ResidentStore::kActive) continue;  // dormant, or retiring (fading out)
    const std::uint32_t slot = pedestrians_.dense_of[rs.id[i].index];
    if (slot == PedestrianStore::kNoSlot) continue;
    s.active_residents.push_back({rs.id[i], scenario_.zones[rs.zone[i]].id,
                                  lanes_.lane(pedestrians_.lane[slot]).id, pedestrians_.s_m[slot]});
  }
  s.has_observers = true;
  for (std::size_t k = 0; k < observers_.size(); ++k) {
    const ObserverView& v = observer_views_[k];
    s.observers.push_back(
        {observers_[k].x_m, observers_[k].y_m, v.z_m, v.has_heading, v.heading_rad});
  }
  return s;
}

// The load's one reconciling step: the saved active set placed again, each
// resident on its saved lane position in its saved zone. Checked completely
// before anything is placed.
std::vector<RestoreError> World::place_saved_active_set(const SaveState& save) {
  std::vector<RestoreError> errors;
  const ResidentStore& rs = population_.residents();
  std::map<std::uint64_t, std::uint32_t> resident_of;
  for (std::uint32_t i = 0; i < rs.size(); ++i) resident_of.emplace(rs.id[i].packed(), i);
  std::vector<std::uint32_t> resident(save.active_residents.size()),
      zone(save.active_residents.size());
  std::vector<LaneIndex> lane(save.active_residents.size());
  std::vector<std::uint32_t> per_zone(scenario_.zones.size(), 0);
  std::vector<std::uint8_t> seen(rs.size(), 0);
  for (std::size_t k = 0; k < save.active_residents.size() && errors.size() < kMaxReportedErrors;
       ++k) {
    const SaveState::ActiveResident& a = save.active_residents[k];
    const std::string row = "active_residents[" + std::to_string(k) + "]";
    const auto r = resident_of.find(a.id.packed());
    if (r == resident_of.end()) {
      errors.push_back({row + ".id", id_text(a.id) + " is not a resident of this scenario"});
      continue;
    }
    if (seen[r->second]++ != 0) {
      errors.push_back({row + ".id", id_text(a.id) + " is listed twice"});
      continue;
    }
    if (rs.active[r->second] == ResidentStore::kDeceased) {
      errors.push_back({row + ".id", id_text(a.id) + " is deceased in this save"});
      continue;
    }
    resident[k] = r->second;
    zone[k] = UINT32_MAX;
    for (std::uint32_t z = 0; z < scenario_.zones.size(); ++z) {
      if (scenario_.zones[z].id == a.zone) zone[k] = z;
    }
    if (zone[k] == UINT32_MAX) {
      errors.push_back({row + ".zone", "unknown zone '" + a.zone + "'"});
      continue;
    }
    const std::uint32_t community = rs.community[r->second];
    if (scenario_.communities[community].saveable && rs.zone[r->second] != zone[k]) {
      errors.push_back({row + ".zone", "'" + a.zone +
                                           "', but the saved zone of saveable resident " +
                                           id_text(a.id) + " is '" +
                                           scenario_.zones[rs.zone[r->second]].id + "'"});
      continue;
    }
    if (++per_zone[zone[k]] > scenario_.zones[zone[k]].capacity) {
      errors.push_back({row + ".zone", "zone '" + a.zone + "' would hold more than its capacity " +
                                           std::to_string(scenario_.zones[zone[k]].capacity)});
      continue;
    }
    // Anywhere a pedestrian walks: residents cross to other zones' lanes.
    const auto walkable =
        std::find_if(lanes_.lanes().begin(), lanes_.lanes().end(),
                     [&](const auto& l) { return l.id == a.lane && l.kind != LaneKind::Road; });
    if (walkable == lanes_.lanes().end()) {
      errors.push_back(
          {row + ".lane", "'" + a.lane + "' is not a sidewalk or crossing of this scenario"});
      continue;
    }
    lane[k] = static_cast<LaneIndex>(walkable - lanes_.lanes().begin());
    if (!(a.s_m >= 0.0 && a.s_m <= lanes_.lane(lane[k]).length_m)) {
      errors.push_back({row + ".s_m", "must be in [0, lane length " +
                                          std::to_string(lanes_.lane(lane[k]).length_m) + "]"});
    }
  }
  if (!errors.empty()) return errors;
  for (std::size_t k = 0; k < save.active_residents.size(); ++k) {
    if (rs.zone[resident[k]] != zone[k]) population_.assign_zone(resident[k], zone[k]);
    push_pedestrian(rs.id[resident[k]], lane[k], save.active_residents[k].s_m, resident[k],
                    PriorityClass::Community, PedestrianOrigin::Resident);
    population_.on_activated(resident[k]);
  }
  return errors;
}

namespace {

// A save's own fields against the scenario (before any world is built).
std::vector<RestoreError> check_save(const Scenario& scenario, const SaveState& save) {
  std::vector<RestoreError> errors;
  for (ScenarioError& e : validate_scenario(scenario))
    errors.push_back({"scenario." + e.path, e.message});
  if (!errors.empty()) return errors;
  if (save.scenario_id != scenario.id) {
    errors.push_back({"scenario_id",
                      "save is of scenario '" + save.scenario_id + "', not '" + scenario.id + "'"});
  }
  if (save.step_us != scenario.step_us) {
    errors.push_back({"step_us", "save steps " + std::to_string(save.step_us) + " us, scenario " +
                                     std::to_string(scenario.step_us) + " us"});
  }
  if (save.pedestrian_target > scenario.entity_capacity) {
    errors.push_back({"pedestrian_target", std::to_string(save.pedestrian_target) +
                                               " exceeds entity_capacity " +
                                               std::to_string(scenario.entity_capacity)});
  }
  if (save.day_us >= 86'400'000'000ull)
    errors.push_back({"day_us", "time of day must be in [0, 24) h"});
  if (save.time_scale < 1 || save.time_scale > 3600)
    errors.push_back({"time_scale", "must be in [1, 3600]"});
  if (save.garage_vehicle_ordinals.size() != scenario.garages.size()) {
    errors.push_back(
        {"garage_vehicle_ordinals", std::to_string(save.garage_vehicle_ordinals.size()) +
                                        " garages saved, scenario has " +
                                        std::to_string(scenario.garages.size())});
  }
  if (std::string why = validate_lifecycle_settings(save.lifecycle); !why.empty()) {
    errors.push_back({"lifecycle", why});
  }
  if (save.saveable_ids.size() != save.saveable_zones.size()) {
    errors.push_back({"saveable_zones", "one zone per saveable identity is required"});
  }
  if (!save.saveable_deceased.empty() &&
      save.saveable_deceased.size() != save.saveable_ids.size()) {
    errors.push_back({"saveable_deceased", "one flag per saveable identity, or none"});
  }
  for (std::size_t k = 0; k < save.saveable_deceased.size(); ++k) {
    if (save.saveable_deceased[k] > 1)
      errors.push_back({"saveable[" + std::to_string(k) + "].deceased", "must be 0 or 1"});
  }
  return errors;
}

}  // namespace

World::RestoreResult World::load_save(const Scenario& scenario, const SaveState& save,
                                      LogSink* log) {
  RestoreResult result;
  result.errors = check_save(scenario, save);
  if (!result.errors.empty()) return result;
  std::unique_ptr<World> w(new World(scenario, save.seed, log));
  // Saveable residents: identities are recreated in the same order, so each
  // saved id must be the fresh world's id of a saveable resident; its zone
  // ownership is restored. A save without any (written before saves carried
  // them, schema 1) means fresh identities in their home zones.
  if (!save.saveable_ids.empty()) {
    const ResidentStore& rs = w->population_.residents();
    std::size_t k = 0;
    for (std::uint32_t i = 0; i < rs.size() && result.errors.size() < kMaxReportedErrors; ++i) {
      if (!scenario.communities[rs.community[i]].saveable) continue;
      const std::string row = "saveable[" + std::to_string(k) + "]";
      if (k >= save.saveable_ids.size()) {
        result.errors.push_back({row, "the scenario has more saveable residents than the save"});
        break;
      }
      if (!(save.saveable_ids[k] == rs.id[i])) {
        result.errors.push_back({row + ".id", "saved " + id_text(save.saveable_ids[k]) +
                                                  " but the scenario's resident is " +
                                                  id_text(rs.id[i])});
      }
      std::uint32_t zone = UINT32_MAX;
      for (std::uint32_t z = 0; z < scenario.zones.size(); ++z) {
        if (scenario.zones[z].id == save.saveable_zones[k]) zone = z;
      }
      if (zone == UINT32_MAX) {
        result.errors.push_back({row + ".zone", "unknown zone '" + save.saveable_zones[k] + "'"});
      } else {
        w->population_.assign_zone(i, zone);
      }
      if (k < save.saveable_deceased.size() && save.saveable_deceased[k] != 0)
        w->population_.load_deceased(i);
      ++k;
    }
    if (result.errors.empty() && k != save.saveable_ids.size()) {
      result.errors.push_back({"saveable", std::to_string(save.saveable_ids.size()) +
                                               " saved identities, the scenario has " +
                                               std::to_string(k) + " saveable residents"});
    }
    if (!result.errors.empty()) return result;
  }
  w->population_.set_settings(save.lifecycle, save.step_index * scenario.step_us);
  w->step_index_ = save.step_index;
  w->population_.set_day_us(save.day_us);
  w->population_.set_time_scale(save.time_scale);
  for (std::uint32_t g = 0; g < save.garage_vehicle_ordinals.size(); ++g) {
    w->vehicles_.set_next_vehicle_ordinal(g, save.garage_vehicle_ordinals[g]);
  }
  w->rng_.reseed(mix64(save.seed) ^ mix64(save.step_index + 0x5A7E));
  w->pedestrian_target_ = save.pedestrian_target;
  if (save.has_observers) {
    CommandResult ignored;
    if (save.observers.size() > 64 ||
        !w->set_observer_points(save.observers, w->observers_, w->observer_views_, ignored)) {
      result.errors.push_back(
          {"observers", "at most 64 observers, with finite coordinates, height and heading"});
      return result;
    }
  }
  result.errors = w->place_saved_active_set(save);
  if (!result.errors.empty()) return result;
  w->population_.refresh_zone_counts();
  w->digest_ = w->compute_digest();
  result.world = std::move(w);
  return result;
}

}  // namespace bustle::core
