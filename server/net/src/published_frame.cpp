// Building the frame the sim thread publishes every step: every entity's
// pose on the wire's grid, placed by index rank, in parts on the step's
// threads (published_frame.hpp).
#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <map>

#include "bustle/core/importance.hpp"
#include "bustle/core/phase_executor.hpp"
#include "bustle/core/sim_tier.hpp"
#include "bustle/proto/motion.hpp"

namespace bustle::net {

ArchetypeTable make_archetypes(const core::Scenario& scenario) {
  ArchetypeTable t;
  t.names.push_back("pedestrian");
  for (const core::CommunitySpec& c : scenario.communities) {
    t.community_first.push_back(static_cast<std::uint16_t>(t.names.size()));
    if (c.professions.empty()) {
      t.names.push_back("pedestrian." + c.id);
    } else {
      for (const std::string& p : c.professions) t.names.push_back("pedestrian." + c.id + "." + p);
    }
  }
  std::map<std::string, std::uint16_t> vehicle_index;
  for (const core::GarageSpec& g : scenario.garages) {
    std::vector<std::uint16_t>& per = t.garage_prototype.emplace_back();
    for (const std::string& p : g.prototypes) {
      auto [it, added] = vehicle_index.emplace(p, static_cast<std::uint16_t>(t.names.size()));
      if (added) t.names.push_back("vehicle." + p);
      per.push_back(it->second);
    }
  }
  return t;
}

namespace {

// Where each entity goes in the frame: the rank of its index among the
// frame's indices (a bit per index; per 64-bit word, the bits before it).
// Each row is written straight to its place, so the frame comes out sorted
// by index with no sort: at a million entities, sorting the 64-byte entries
// (stores fall out of index order as entities despawn and spawn) cost more
// than this whole map.
struct IndexRanks {
  std::vector<std::uint64_t> bits;
  std::vector<std::uint32_t> before;  // per word: bits set in the words before it

  void clear(std::uint32_t capacity) { bits.assign((std::size_t{capacity} + 63) / 64, 0); }
  bool test(std::uint32_t index) const {
    return index / 64 < bits.size() && (bits[index / 64] >> (index % 64) & 1u) != 0;
  }
  void set(std::uint32_t index) {
    if (index / 64 >= bits.size()) bits.resize(index / 64 + 1, 0);  // never: below capacity
    bits[index / 64] |= std::uint64_t{1} << (index % 64);
  }
  // Counts the ranks; returns how many indices are set.
  std::uint32_t finish() {
    before.resize(bits.size());
    std::uint32_t n = 0;
    for (std::size_t w = 0; w < bits.size(); ++w) {
      before[w] = n;
      n += static_cast<std::uint32_t>(std::popcount(bits[w]));
    }
    return n;
  }
  // [Precondition: test(index), finish() called since the last set()]
  std::uint32_t rank(std::uint32_t index) const {
    const std::uint64_t below = (std::uint64_t{1} << (index % 64)) - 1;
    return before[index / 64] + static_cast<std::uint32_t>(std::popcount(bits[index / 64] & below));
  }
};

// The distance along the lane the clients will reproduce: the simulated
// one, extrapolated by the steps since it was simulated, on the mm grid.
std::uint32_t posed_s_mm(const core::World& world, core::LaneIndex lane, double s_m,
                         std::uint32_t speed_mmps, std::uint32_t since_steps) {
  const std::uint64_t step = world.step_index();
  const std::uint32_t length_mm = proto::to_mm(world.lanes().lane(lane).length_m);
  const proto::MotionAnchor simulated{lane, std::min(proto::to_mm(s_m), length_mm), speed_mmps,
                                      step - std::min<std::uint64_t>(since_steps, step)};
  return proto::predict_s_mm(simulated, step, world.scenario().step_us, length_mm);
}

// A live row's motion on the wire's grid: its speed and posed distance.
struct RowMotion {
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
};

// What a frame with a coverage learnt of each live row before posing it
// (pedestrians' rows, then vehicles'): whether it is posed, and its motion,
// computed once (posing asks again) and in parts on the step's threads.
struct PosedRows {
  std::vector<std::uint8_t> posed;
  std::vector<RowMotion> motion;
  // Per lane: its length and the farthest a pedestrian's posed distance can
  // lie ahead of its simulated one (reach_mm), both in mm.
  std::vector<std::uint32_t> length_mm;
  std::vector<std::uint32_t> reach_mm;
  // Per pedestrians' part, per lane chain: its pedestrians (summed into
  // PublishedFrame::chain_pedestrians).
  std::vector<std::uint32_t> part_chains;
};

// The most steps a pedestrian row stands since it last moved: a Coarse
// stride's steps since its due step plus the largest catch-up (core
// invariant 5b).
inline constexpr std::uint32_t kPedestrianSinceStepsMax =
    core::tier_stride(core::SimTier::Coarse) - 1 + core::kMaxCatchUpSteps;

struct FrameBuilder {
  const core::World& world;
  const ArchetypeTable& archetypes;
  PublishedFrame& frame;
  core::ImportanceField weights;  // areas and class/type weights only
  const IndexRanks& ranks;        // set for exactly the entities posed
  // Per lane, its posed stretch; null when the frame poses the whole city.
  const PosedSpan* covered = nullptr;
  PosedRows* rows = nullptr;        // filled by mark_posed_rows() when covered
  std::vector<Bounds> part_bounds;  // one per part of run_parts()

  RowMotion pedestrian_motion(std::uint32_t row) const {
    const core::PedestrianStore& peds = world.pedestrians();
    const std::uint32_t speed = proto::to_mmps(world.pedestrian_speed_mps(row));
    return {posed_s_mm(world, peds.lane[row], peds.s_m[row], speed,
                       world.pedestrian_steps_since_moved(row)),
            speed};
  }
  RowMotion vehicle_motion(std::uint32_t row) const {
    const core::VehicleStore& v = world.vehicles().store();
    const std::uint32_t since =
        v.despawn_requested[row]
            ? 0
            : core::steps_since_due(frame.step, core::id_phase(v.id[row]), v.sim_tier[row]);
    const std::uint32_t speed = proto::to_mmps(v.speed_mps[row]);
    return {posed_s_mm(world, v.lane[row], v.s_m[row], speed, since), speed};
  }

  // The pose at s_mm (posed_s_mm) on the lane: position for interest and
  // hints, written into the frame's entry `e` (every other field reset).
  // Entries are filled in place, field by field: an entry built on the
  // stack and then copied whole stalled on its just-written bytes (a
  // seventh of a million-entity frame build's CPU time).
  void lane_pose(PublishedEntity& e, core::EntityId id, core::LaneIndex lane, RowMotion m) const {
    const core::Lane& L = world.lanes().lane(lane);
    e = PublishedEntity{};
    e.id = id;
    e.lane = lane;
    e.speed_mmps = m.speed_mmps;
    e.s_mm = m.s_mm;
    const core::Vec2 p = world.lanes().position(lane, static_cast<double>(e.s_mm) / 1000.0);
    e.x_m = p.x_m;
    e.y_m = p.y_m;
    e.z_m = static_cast<float>(L.elevation_m);
  }

  // Rows [begin, end) of each store into out[row]: parts of the frame that
  // different threads may build at once (they only read the world).
  void pedestrians(std::uint32_t begin, std::uint32_t end, PublishedEntity* out,
                   Bounds& bounds) const {
    Bounds local;  // written once: parts on other threads write their neighbours
    const core::PedestrianStore& peds = world.pedestrians();
    const core::ResidentStore& residents = world.population().residents();
    for (std::uint32_t i = begin; i < end; ++i) {
      if (rows != nullptr && rows->posed[i] == 0) continue;
      const core::SimTier tier = peds.sim_tier[i];
      PublishedEntity& e = out[ranks.rank(peds.id[i].index)];
      lane_pose(e, peds.id[i], peds.lane[i],
                rows != nullptr ? rows->motion[i] : pedestrian_motion(i));
      e.kind = core::EntityKind::Pedestrian;
      e.sim_tier = static_cast<std::uint8_t>(tier);
      e.weight = static_cast<float>(
          weights.weight(static_cast<core::PriorityClass>(peds.priority[i]), false, e.x_m, e.y_m));
      // The held bit marks masked pedestrians and corpses: only those search
      // the (sorted, small) corpse list.
      if (peds.phase[i] & core::PedestrianStore::kAdmissionMaskedBit)
        e.corpse = world.is_corpse(peds.id[i]);
      const std::int32_t of =
          peds.origin[i] == static_cast<std::uint8_t>(core::PedestrianOrigin::Resident)
              ? world.population().resident_of(peds.id[i])
              : core::ResidentStore::kNone;
      const auto r = static_cast<std::uint32_t>(of);
      if (of != core::ResidentStore::kNone && r < residents.community.size()) {
        e.archetype = static_cast<std::uint16_t>(
            archetypes.community_first[residents.community[r]] + residents.profession[r]);
        e.label = kLabelResident | r;
      }
      local.add(e.x_m, e.y_m);
    }
    bounds = local;
  }

  void vehicles(std::uint32_t begin, std::uint32_t end, PublishedEntity* out,
                Bounds& bounds) const {
    Bounds local;
    const core::VehicleSystem& vs = world.vehicles();
    const core::VehicleStore& v = vs.store();
    const std::uint32_t first = world.pedestrians().size();  // of the vehicles' rows in `rows`
    for (std::uint32_t i = begin; i < end; ++i) {
      if (rows != nullptr && rows->posed[first + i] == 0) continue;
      const core::SimTier tier = v.sim_tier[i];
      PublishedEntity& e = out[ranks.rank(v.id[i].index)];
      lane_pose(e, v.id[i], v.lane[i],
                rows != nullptr ? rows->motion[first + i] : vehicle_motion(i));
      e.kind = core::EntityKind::Vehicle;
      e.sim_tier = static_cast<std::uint8_t>(tier);
      e.policy = v.control_policy[i];
      e.weight =
          static_cast<float>(weights.weight(core::PriorityClass::Background, true, e.x_m, e.y_m));
      if (v.garage[i] < archetypes.garage_prototype.size() &&
          v.prototype[i] < archetypes.garage_prototype[v.garage[i]].size()) {
        e.archetype = archetypes.garage_prototype[v.garage[i]][v.prototype[i]];
      }
      e.label =
          kLabelVehicle | std::uint64_t{v.garage[i]} << 40 | (v.ordinal[i] & ((1ull << 40) - 1));
      local.add(e.x_m, e.y_m);
    }
    bounds = local;
  }

  // Calls ped(begin, end, part) over the pedestrians' rows and
  // veh(begin, end, part) over the vehicles', in parts of
  // core::kRowsPerPart rows on the world's phase executor (the step's
  // threads, idle between steps), or inline; part_bounds holds one Bounds
  // per part. Each part writes only its own rows' places, so the result is
  // the same for any number of threads.
  template <class Ped, class Veh>
  void run_parts(const Ped& ped, const Veh& veh) {
    const std::uint32_t peds = world.pedestrians().size();
    const std::uint32_t vehicles_n = world.vehicles().store().size();
    const std::uint32_t ped_parts = (peds + core::kRowsPerPart - 1) / core::kRowsPerPart;
    const std::uint32_t parts =
        ped_parts + (vehicles_n + core::kRowsPerPart - 1) / core::kRowsPerPart;
    part_bounds.assign(parts, Bounds{});
    struct Job {
      const Ped& ped;
      const Veh& veh;
      std::uint32_t peds, vehicles, ped_parts;
    } job{ped, veh, peds, vehicles_n, ped_parts};
    const auto part = [](void* context, std::uint32_t p) {
      const Job& j = *static_cast<const Job*>(context);
      if (p < j.ped_parts) {
        const std::uint32_t begin = p * core::kRowsPerPart;
        j.ped(begin, std::min(j.peds, begin + core::kRowsPerPart), p);
      } else {
        const std::uint32_t begin = (p - j.ped_parts) * core::kRowsPerPart;
        j.veh(begin, std::min(j.vehicles, begin + core::kRowsPerPart), p);
      }
    };
    core::PhaseExecutor* threads = world.lent_phase_executor();
    if (threads != nullptr && threads->threads() > 1 && parts > 1) {
      threads->run(parts, part, &job);
    } else {
      for (std::uint32_t p = 0; p < parts; ++p) part(&job, p);
    }
  }

  // Every posed pedestrian and vehicle, each at its index's rank (the
  // entities are already sized for them and the orphans).
  void live_entities() {
    PublishedEntity* out = frame.entities.data();
    run_parts([&](std::uint32_t begin, std::uint32_t end,
                  std::uint32_t p) { pedestrians(begin, end, out, part_bounds[p]); },
              [&](std::uint32_t begin, std::uint32_t end, std::uint32_t p) {
                vehicles(begin, end, out, part_bounds[p]);
              });
    for (const Bounds& b : part_bounds) frame.bounds.add(b);
  }

  // Per lane, rows->length_mm and rows->reach_mm: a walker is extrapolated
  // at its lane's limit or not at all (World::pedestrian_speed_mps), over at
  // most kPedestrianSinceStepsMax steps.
  void lane_reach() {
    const core::LaneGraph& lanes = world.lanes();
    const std::uint64_t step_us = world.scenario().step_us;
    rows->length_mm.resize(lanes.size());
    rows->reach_mm.resize(lanes.size());
    for (core::LaneIndex l = 0; l < lanes.size(); ++l) {
      const core::Lane& L = lanes.lane(l);
      rows->length_mm[l] = proto::to_mm(L.length_m);
      const std::uint64_t reach = std::uint64_t{proto::to_mmps(L.speed_mps_limit)} *
                                      kPedestrianSinceStepsMax * step_us / 1'000'000u +
                                  1;
      rows->reach_mm[l] = static_cast<std::uint32_t>(std::min<std::uint64_t>(reach, UINT32_MAX));
    }
  }

  // A pedestrian row that cannot be posed: its posed distance lies in
  // [simulated, simulated + reach] (posed_s_mm), and that misses its lane's
  // span, so its motion need not be computed.
  bool pedestrian_outside(std::uint32_t row, const PosedSpan& span) const {
    const core::PedestrianStore& peds = world.pedestrians();
    const core::LaneIndex lane = peds.lane[row];
    const std::uint32_t from = std::min(proto::to_mm(peds.s_m[row]), rows->length_mm[lane]);
    return from > span.hi_mm || std::uint64_t{from} + rows->reach_mm[lane] < span.lo_mm;
  }

  // With a coverage: per live row, its motion and whether its posed
  // distance lies in its lane's stretch (`rows`), each posed row's index
  // set in `out`, and per pedestrians' part its chains' pedestrians
  // (rows->part_chains), in parts. Indices of different parts can share a
  // word of `out`: bits are set with an atomic or.
  void mark_posed_rows(IndexRanks& out) {
    const core::PedestrianStore& peds = world.pedestrians();
    const core::VehicleStore& v = world.vehicles().store();
    const core::LaneGraph& lanes = world.lanes();
    const std::size_t chains = lanes.chains().size();
    rows->posed.resize(std::size_t{peds.size()} + v.size());
    rows->motion.resize(rows->posed.size());
    rows->part_chains.assign(
        (std::size_t{peds.size()} + core::kRowsPerPart - 1) / core::kRowsPerPart * chains, 0);
    lane_reach();
    const auto mark = [&](std::size_t at, core::EntityId id, core::LaneIndex lane, auto&& outside,
                          auto&& motion) {
      rows->posed[at] = 0;
      const PosedSpan span = covered[lane];
      if (!span.any() || outside(span)) return;
      rows->motion[at] = motion();
      if (!span.holds(rows->motion[at].s_mm)) return;
      rows->posed[at] = 1;
      assert(id.index / 64 < out.bits.size());  // sized to the registry's capacity
      std::atomic_ref<std::uint64_t>(out.bits[id.index / 64])
          .fetch_or(std::uint64_t{1} << (id.index % 64), std::memory_order_relaxed);
    };
    run_parts(
        [&](std::uint32_t begin, std::uint32_t end, std::uint32_t p) {
          std::uint32_t* chain_count = rows->part_chains.data() + std::size_t{p} * chains;
          for (std::uint32_t i = begin; i < end; ++i) {
            ++chain_count[lanes.chain_of(peds.lane[i])];
            mark(
                i, peds.id[i], peds.lane[i],
                [&](const PosedSpan& span) { return pedestrian_outside(i, span); },
                [&] { return pedestrian_motion(i); });
          }
        },
        [&](std::uint32_t begin, std::uint32_t end, std::uint32_t) {
          for (std::uint32_t i = begin; i < end; ++i)
            mark(
                std::size_t{peds.size()} + i, v.id[i], v.lane[i],
                [](const PosedSpan&) { return false; }, [&] { return vehicle_motion(i); });
        });
  }

  // Sets in `out` the index of every pedestrian and vehicle the frame
  // poses: all of them, or those mark_posed_rows() finds posed.
  void rank_live(IndexRanks& out) {
    const core::PedestrianStore& peds = world.pedestrians();
    const core::VehicleStore& vehicles = world.vehicles().store();
    if (covered == nullptr) {
      for (const core::EntityId id : peds.id) out.set(id.index);
      for (const core::EntityId id : vehicles.id) out.set(id.index);
      return;
    }
    mark_posed_rows(out);
  }

  // PublishedFrame::chain_pedestrians from the parts' counts
  // (mark_posed_rows()).
  void sum_part_chains() const {
    std::vector<std::uint32_t>& sum = frame.chain_pedestrians;
    sum.assign(world.lanes().chains().size(), 0);
    for (std::size_t at = 0; at < rows->part_chains.size(); at += sum.size())
      for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += rows->part_chains[at + c];
  }

  // What becomes of each orphan (`placed`): a store still holds its index (a
  // vehicle the world keeps until it is deleted: only marked, when posed),
  // the frame adds it (its index set in `ranks`), or it stands where the
  // coverage poses nothing. Before IndexRanks::finish(). Indices are unique
  // among live entities: a stale occupant cannot share a slot with a live
  // orphan.
  enum Placed : std::uint8_t { kHeld = 0, kAdded = 1, kOutside = 2 };
  static void rank_orphans(const core::World& world, const PosedSpan* covered, IndexRanks& ranks,
                           std::vector<std::uint8_t>& placed) {
    placed.clear();
    const auto held = [&](std::uint32_t index) {
      const auto& p = world.pedestrians().dense_of;
      const auto& v = world.vehicles().store().dense_of;
      return (index < p.size() && p[index] != core::PedestrianStore::kNoSlot) ||
             (index < v.size() && v[index] != core::VehicleStore::kNoSlot);
    };
    for (const core::OrphanRecord& o : world.orphans()) {
      // An orphan off every lane is never: the core validates orphan lanes.
      if (held(o.id.index) || o.lane >= world.lanes().size()) {
        placed.push_back(kHeld);
      } else {
        const bool in =
            covered == nullptr || covered[o.lane].holds(posed_s_mm(world, o.lane, o.s_m, 0, 0));
        placed.push_back(in ? kAdded : kOutside);
      }
    }
    for (std::size_t k = 0; k < placed.size(); ++k)
      if (placed[k] == kAdded) ranks.set(world.orphans()[k].id.index);
  }

  // Orphans (retiring, fading out) stay in the stream until final deletion,
  // standing still where they stopped, so clients can fade them there. One
  // still held by its store is only marked.
  void orphans(const std::vector<std::uint8_t>& placed) {
    std::vector<PublishedEntity>& entities = frame.entities;
    const core::ResidentStore& residents = world.population().residents();
    const std::vector<core::OrphanRecord>& records = world.orphans();
    for (std::size_t k = 0; k < records.size(); ++k) {
      const core::OrphanRecord& o = records[k];
      if (placed[k] == kHeld) {
        if (!ranks.test(o.id.index)) continue;  // off every lane: never
        PublishedEntity& held = entities[ranks.rank(o.id.index)];
        if (held.id == o.id) {
          held.retiring = true;
          held.speed_mmps = 0;
        }
        continue;
      }
      // Pedestrians never walk roads: an orphan on a road is a vehicle even
      // once the vehicle store has let it go.
      const bool vehicle = world.vehicles().is_vehicle(o.id) ||
                           !core::is_pedestrian_lane(world.lanes().lane(o.lane).kind);
      // Counted among its chain's pedestrians also where it is not posed.
      if (!vehicle && !frame.chain_pedestrians.empty())
        ++frame.chain_pedestrians[world.lanes().chain_of(o.lane)];
      if (placed[k] == kOutside) continue;
      PublishedEntity& e = entities[ranks.rank(o.id.index)];
      lane_pose(e, o.id, o.lane, {posed_s_mm(world, o.lane, o.s_m, 0, 0), 0});
      e.kind = vehicle ? core::EntityKind::Vehicle : core::EntityKind::Pedestrian;
      e.sim_tier = static_cast<std::uint8_t>(core::SimTier::Coarse);
      e.retiring = true;
      e.corpse = core::is_corpse_reason(o.reason);  // a corpse fading out stays one
      if (!vehicle && o.resident < residents.community.size()) {
        e.archetype =
            static_cast<std::uint16_t>(archetypes.community_first[residents.community[o.resident]] +
                                       residents.profession[o.resident]);
        e.label = kLabelResident | o.resident;
      }
      frame.bounds.add(e.x_m, e.y_m);
    }
  }
};

// `covered`: per lane, the stretch `coverage` poses (LaneCoverage::mark);
// null when the coverage is whole.
void build_frame(const core::World& world, const ArchetypeTable& archetypes,
                 std::uint64_t world_epoch, bool with_entities, const Coverage& coverage,
                 const PosedSpan* covered, PublishedFrame* frame) {
  // A pooled frame keeps its entries: live_entities() overwrites them and
  // resizes, so a steady city neither frees nor value-initialises 64 bytes
  // per entity every step.
  if (!with_entities) frame->entities.clear();
  frame->chain_pedestrians.clear();
  frame->entities_built = with_entities;
  frame->bounds = Bounds{};
  frame->signal_phases.clear();
  frame->world_epoch = world_epoch;
  frame->step = world.step_index();
  frame->sim_time_us = world.sim_time_us();
  frame->digest = world.digest();
  const std::uint32_t dots_every = world.scenario().pedestrians.dots_every_steps;
  frame->dot_step = dots_every > 0 && world.step_index() % dots_every == 0;
  frame->coverage = coverage;
  if (coverage.whole) covered = nullptr;
  if (with_entities) {
    // Kept per thread (the sim thread builds the frames), so a steady city
    // allocates nothing here.
    thread_local IndexRanks ranks;
    thread_local std::vector<std::uint8_t> orphans_placed;
    thread_local PosedRows posed_rows;
    ranks.clear(world.registry().capacity());
    FrameBuilder b{
        world, archetypes, *frame, {}, ranks, covered, covered != nullptr ? &posed_rows : nullptr,
        {}};
    b.rank_live(ranks);
    FrameBuilder::rank_orphans(world, covered, ranks, orphans_placed);
    frame->entities.resize(ranks.finish());  // every entry written below
    b.weights.prepare(world.scenario().tiers.importance, {}, {});
    b.live_entities();
    // Every pedestrian row is a pedestrian entity (the orphans add theirs).
    // On dot steps, when every client with dots wants them, and in every
    // frame that poses part of the city (a walk over it would miss the
    // rest); a delta at another step with dots (a baseline, or one
    // coalescing a dot step) counts them by walking a whole frame.
    if (covered != nullptr) {
      b.sum_part_chains();
    } else if (frame->dot_step) {
      frame->chain_pedestrians.assign(world.lanes().chains().size(), 0);
      for (const core::LaneIndex lane : world.pedestrians().lane)
        ++frame->chain_pedestrians[world.lanes().chain_of(lane)];
    }
    b.orphans(orphans_placed);
  }
  for (const core::SignalState& sg : world.vehicles().signals()) {
    frame->signal_phases.push_back(static_cast<std::uint8_t>(sg.phase));
  }
  frame->observers = world.observers();
  frame->observer_views = world.observer_views();
}

}  // namespace

std::shared_ptr<const PublishedFrame> make_published_frame(const core::World& world,
                                                           const ArchetypeTable& archetypes,
                                                           std::uint64_t world_epoch) {
  auto frame = std::make_shared<PublishedFrame>();
  build_frame(world, archetypes, world_epoch, true, Coverage{}, nullptr, frame.get());
  return frame;
}

std::shared_ptr<const PublishedFrame> FramePool::make(
    const core::World& world, const ArchetypeTable& archetypes, std::uint64_t world_epoch,
    std::span<const core::EntityId> awaiting_representation, bool with_entities,
    const Coverage& coverage) {
  // use_count() == 1: only the pool holds it, so no other thread can read it
  // (the count only grows through a copy of a pointer someone else holds).
  std::shared_ptr<PublishedFrame> frame;
  for (const auto& f : frames_) {
    if (f.use_count() == 1) {
      // use_count() is a relaxed load; the fence pairs it with the release
      // of the last other owner's decrement, so its reads of the old
      // contents happen before the writes below.
      std::atomic_thread_fence(std::memory_order_acquire);
      frame = f;
      break;
    }
  }
  if (!frame) {
    frame = std::make_shared<PublishedFrame>();
    if (frames_.size() < kFramePoolSize) frames_.push_back(frame);
  }
  const PosedSpan* covered = nullptr;
  if (with_entities && !coverage.whole) {
    const std::vector<PosedSpan>& spans = lane_coverage_.mark(world.lanes(), coverage, world_epoch);
    // Discs that between them reach every lane end to end (many clients
    // spread over the city) pose every entity: the frame is then built as a
    // whole one, without testing each row against its lane's stretch. It
    // keeps its discs, so sessions check their needs against them as ever.
    if (!lane_coverage_.every_lane_whole()) covered = spans.data();
  }
  build_frame(world, archetypes, world_epoch, with_entities, coverage, covered, frame.get());
  frame->awaiting_representation.assign(awaiting_representation.begin(),
                                        awaiting_representation.end());
  return frame;
}

}  // namespace bustle::net
