// Building the frame the sim thread publishes every step: every entity's
// pose on the wire's grid, placed by index rank, in parts on the step's
// threads (published_frame.hpp).
#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
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

struct FrameBuilder {
  const core::World& world;
  const ArchetypeTable& archetypes;
  PublishedFrame& frame;
  core::ImportanceField weights;  // areas and class/type weights only
  std::uint32_t step_us;
  const IndexRanks& ranks;
  // Per lane: 1 when the frame's coverage poses it; null when whole.
  const std::uint8_t* covered;
  std::vector<Bounds> part_bounds;  // live_entities(): one per part

  bool posed(core::LaneIndex lane) const { return covered == nullptr || covered[lane] != 0; }

  // The pose the clients will reproduce: the simulated distance along the
  // lane, extrapolated by the steps since it was simulated, on the mm grid.
  PublishedEntity lane_pose(core::EntityId id, core::LaneIndex lane, double s_m, double speed_mps,
                            std::uint32_t since_steps) const {
    const core::Lane& L = world.lanes().lane(lane);
    const std::uint32_t length_mm = proto::to_mm(L.length_m);
    PublishedEntity e;
    e.id = id;
    e.lane = lane;
    e.speed_mmps = proto::to_mmps(speed_mps);
    const proto::MotionAnchor simulated{
        lane, std::min(proto::to_mm(s_m), length_mm), e.speed_mmps,
        frame.step - std::min<std::uint64_t>(since_steps, frame.step)};
    e.s_mm = proto::predict_s_mm(simulated, frame.step, step_us, length_mm);
    const core::Vec2 p = world.lanes().position(lane, static_cast<double>(e.s_mm) / 1000.0);
    e.x_m = p.x_m;
    e.y_m = p.y_m;
    e.z_m = static_cast<float>(L.elevation_m);
    return e;
  }

  // Rows [begin, end) of each store into out[row]: parts of the frame that
  // different threads may build at once (they only read the world).
  void pedestrians(std::uint32_t begin, std::uint32_t end, PublishedEntity* out,
                   Bounds& bounds) const {
    Bounds local;  // written once: parts on other threads write their neighbours
    const core::PedestrianStore& peds = world.pedestrians();
    const core::ResidentStore& residents = world.population().residents();
    for (std::uint32_t i = begin; i < end; ++i) {
      if (!posed(peds.lane[i])) continue;
      const core::SimTier tier = peds.sim_tier[i];
      PublishedEntity e =
          lane_pose(peds.id[i], peds.lane[i], peds.s_m[i], world.pedestrian_speed_mps(i),
                    world.pedestrian_steps_since_moved(i));
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
      out[ranks.rank(e.id.index)] = e;
    }
    bounds = local;
  }

  void vehicles(std::uint32_t begin, std::uint32_t end, PublishedEntity* out,
                Bounds& bounds) const {
    Bounds local;
    const core::VehicleSystem& vs = world.vehicles();
    const core::VehicleStore& v = vs.store();
    for (std::uint32_t i = begin; i < end; ++i) {
      if (!posed(v.lane[i])) continue;
      const core::SimTier tier = v.sim_tier[i];
      const std::uint32_t since =
          v.despawn_requested[i] ? 0
                                 : core::steps_since_due(frame.step, core::id_phase(v.id[i]), tier);
      PublishedEntity e = lane_pose(v.id[i], v.lane[i], v.s_m[i], v.speed_mps[i], since);
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
      out[ranks.rank(e.id.index)] = e;
    }
    bounds = local;
  }

  // Every pedestrian and every vehicle, each at its index's rank (the
  // entities are already sized for them and the orphans): in parts of
  // core::kRowsPerPart rows on the world's phase executor (the step's
  // threads, idle between steps), or inline. Each entry depends on its row
  // alone and goes to its own place, so the frame is the same for any number
  // of threads.
  void live_entities() {
    const std::uint32_t peds = world.pedestrians().size();
    const std::uint32_t vehicles_n = world.vehicles().store().size();
    const std::uint32_t ped_parts = (peds + core::kRowsPerPart - 1) / core::kRowsPerPart;
    const std::uint32_t parts =
        ped_parts + (vehicles_n + core::kRowsPerPart - 1) / core::kRowsPerPart;
    part_bounds.assign(parts, Bounds{});
    struct Job {
      const FrameBuilder* b;
      std::uint32_t peds, vehicles, ped_parts;
      PublishedEntity* out;
      Bounds* bounds;  // one per part
    } job{this, peds, vehicles_n, ped_parts, frame.entities.data(), part_bounds.data()};
    const auto part = [](void* context, std::uint32_t p) {
      const Job& j = *static_cast<const Job*>(context);
      if (p < j.ped_parts) {
        const std::uint32_t begin = p * core::kRowsPerPart;
        j.b->pedestrians(begin, std::min(j.peds, begin + core::kRowsPerPart), j.out, j.bounds[p]);
      } else {
        const std::uint32_t begin = (p - j.ped_parts) * core::kRowsPerPart;
        j.b->vehicles(begin, std::min(j.vehicles, begin + core::kRowsPerPart), j.out, j.bounds[p]);
      }
    };
    core::PhaseExecutor* threads = world.lent_phase_executor();
    if (threads != nullptr && threads->threads() > 1 && parts > 1) {
      threads->run(parts, part, &job);
    } else {
      for (std::uint32_t p = 0; p < parts; ++p) part(&job, p);
    }
    for (const Bounds& b : part_bounds) frame.bounds.add(b);
  }

  // What becomes of each orphan (`placed`): a store still holds its index (a
  // vehicle the world keeps until it is deleted: only marked, when posed),
  // the frame adds it (its index set in `ranks`), or it stands on a lane the
  // coverage leaves out. Before IndexRanks::finish(). Indices are unique
  // among live entities: a stale occupant cannot share a slot with a live
  // orphan.
  enum Placed : std::uint8_t { kHeld = 0, kAdded = 1, kOutside = 2 };
  static void rank_orphans(const core::World& world, const std::uint8_t* covered, IndexRanks& ranks,
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
        placed.push_back(covered == nullptr || covered[o.lane] != 0 ? kAdded : kOutside);
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
      PublishedEntity e = lane_pose(o.id, o.lane, o.s_m, 0.0, 0);
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
      entities[ranks.rank(o.id.index)] = e;
    }
  }
};

// `covered`: per lane, 1 when `coverage` poses it (LaneCoverage::mark); null
// when the coverage is whole.
void build_frame(const core::World& world, const ArchetypeTable& archetypes,
                 std::uint64_t world_epoch, bool with_entities, const Coverage& coverage,
                 const std::uint8_t* covered, PublishedFrame* frame) {
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
    ranks.clear(world.registry().capacity());
    const core::PedestrianStore& peds = world.pedestrians();
    const core::VehicleStore& vehicles = world.vehicles().store();
    if (covered == nullptr) {
      for (const core::EntityId id : peds.id) ranks.set(id.index);
      for (const core::EntityId id : vehicles.id) ranks.set(id.index);
    } else {
      for (std::uint32_t i = 0; i < peds.size(); ++i)
        if (covered[peds.lane[i]] != 0) ranks.set(peds.id[i].index);
      for (std::uint32_t i = 0; i < vehicles.size(); ++i)
        if (covered[vehicles.lane[i]] != 0) ranks.set(vehicles.id[i].index);
    }
    FrameBuilder::rank_orphans(world, covered, ranks, orphans_placed);
    frame->entities.resize(ranks.finish());  // every entry written below
    FrameBuilder b{world, archetypes, *frame, {}, world.scenario().step_us, ranks, covered, {}};
    b.weights.prepare(world.scenario().tiers.importance, {}, {});
    b.live_entities();
    // Every pedestrian row is a pedestrian entity (the orphans add theirs).
    // On dot steps, when every client with dots wants them, and in every
    // frame that poses part of the city (a walk over it would miss the
    // rest); a delta at another step with dots (a baseline, or one
    // coalescing a dot step) counts them by walking a whole frame.
    if (frame->dot_step || covered != nullptr) {
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
  const std::uint8_t* covered = nullptr;
  if (with_entities && !coverage.whole)
    covered = lane_coverage_.mark(world.lanes(), coverage, world_epoch).data();
  build_frame(world, archetypes, world_epoch, with_entities, coverage, covered, frame.get());
  frame->awaiting_representation.assign(awaiting_representation.begin(),
                                        awaiting_representation.end());
  return frame;
}

}  // namespace bustle::net
