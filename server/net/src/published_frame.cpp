#include "bustle/net/published_frame.hpp"

#include <algorithm>
#include <array>
#include <atomic>
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

struct FrameBuilder {
  const core::World& world;
  const ArchetypeTable& archetypes;
  PublishedFrame& frame;
  core::ImportanceField weights;  // areas and class/type weights only
  std::uint32_t step_us;
  std::vector<Bounds> part_bounds;  // live_entities(): one per part

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
      out[i] = e;
    }
    bounds = local;
  }

  void vehicles(std::uint32_t begin, std::uint32_t end, PublishedEntity* out,
                Bounds& bounds) const {
    Bounds local;
    const core::VehicleSystem& vs = world.vehicles();
    const core::VehicleStore& v = vs.store();
    for (std::uint32_t i = begin; i < end; ++i) {
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
      out[i] = e;
    }
    bounds = local;
  }

  // Every pedestrian, then every vehicle, at frame.entities[row] and
  // [pedestrians + row]: in parts of core::kRowsPerPart rows on the world's
  // phase executor (the step's threads, idle between steps), or inline.
  // Each entry depends on its row alone, so the frame is the same for any
  // number of threads.
  void live_entities() {
    const std::uint32_t peds = world.pedestrians().size();
    const std::uint32_t vehicles_n = world.vehicles().store().size();
    frame.entities.resize(std::size_t{peds} + vehicles_n);  // every entry written below
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
        j.b->vehicles(begin, std::min(j.vehicles, begin + core::kRowsPerPart), j.out + j.peds,
                      j.bounds[p]);
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

  // Orphans (retiring, fading out) stay in the stream until final deletion,
  // standing still where they stopped, so clients can fade them there. One
  // still held by its store (a vehicle the world keeps until it is deleted)
  // is only marked. `entities` is sorted by index and stays so.
  void orphans() {
    const auto by_index = [](const PublishedEntity& a, const PublishedEntity& b) {
      return a.id.index < b.id.index;
    };
    std::vector<PublishedEntity>& entities = frame.entities;
    const auto live = static_cast<std::ptrdiff_t>(entities.size());
    const core::ResidentStore& residents = world.population().residents();
    for (const core::OrphanRecord& o : world.orphans()) {
      PublishedEntity probe;
      probe.id = o.id;
      const auto it = std::lower_bound(entities.begin(), entities.begin() + live, probe, by_index);
      if (it != entities.begin() + live && it->id.index == o.id.index) {
        // Indices are unique among live entities; a stale occupant cannot
        // share a slot with a live orphan, so this is the orphan itself.
        if (it->id == o.id) {
          it->retiring = true;
          it->speed_mmps = 0;
        }
        continue;
      }
      if (o.lane >= world.lanes().size()) continue;  // never: the core validates orphan lanes
      PublishedEntity e = lane_pose(o.id, o.lane, o.s_m, 0.0, 0);
      // Pedestrians never walk roads: an orphan on a road is a vehicle even
      // once the vehicle store has let it go.
      const bool vehicle = world.vehicles().is_vehicle(o.id) ||
                           !core::is_pedestrian_lane(world.lanes().lane(o.lane).kind);
      e.kind = vehicle ? core::EntityKind::Vehicle : core::EntityKind::Pedestrian;
      if (!vehicle && !frame.chain_pedestrians.empty())
        ++frame.chain_pedestrians[world.lanes().chain_of(o.lane)];
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
      entities.push_back(e);
    }
    // The orphan set is sorted by id, hence by index: merge the two runs.
    std::inplace_merge(entities.begin(), entities.begin() + live, entities.end(), by_index);
  }
};

// Orders `entities` by id.index (unique among live entities, below 2^24, the
// schema's entity_capacity maximum): nothing when already in order (a city
// without despawns keeps its stores in index order), else a two-pass radix
// sort of (index, position) keys and one gather into the scratch buffers
// (kept per thread, so a steady city allocates nothing here). Same order as
// a comparison sort, in linear time: at 1 M entities std::sort of the
// 64-byte entries was the largest single cost of a server step.
struct SortScratch {
  std::vector<PublishedEntity> entities;
  std::vector<std::uint64_t> keys, sorted;
};

void sort_by_index(std::vector<PublishedEntity>& entities, SortScratch& scratch) {
  const auto by_index = [](const PublishedEntity& x, const PublishedEntity& y) {
    return x.id.index < y.id.index;
  };
  if (std::is_sorted(entities.begin(), entities.end(), by_index)) return;
  constexpr unsigned kBits = 12;
  constexpr std::uint32_t kBuckets = 1u << kBits;
  if (entities.size() >= (std::size_t{1} << 32) ||
      std::any_of(entities.begin(), entities.end(),
                  [](const PublishedEntity& e) { return e.id.index >> (2 * kBits) != 0; })) {
    std::sort(entities.begin(), entities.end(), by_index);  // never: indices fit 24 bits
    return;
  }
  std::vector<std::uint64_t>& keys = scratch.keys;
  std::vector<std::uint64_t>& sorted = scratch.sorted;
  keys.resize(entities.size());
  sorted.resize(entities.size());
  for (std::size_t k = 0; k < entities.size(); ++k)
    keys[k] = std::uint64_t{entities[k].id.index} << 32 | k;
  for (unsigned pass = 0; pass < 2; ++pass) {
    const unsigned shift = 32 + pass * kBits;
    std::array<std::uint32_t, kBuckets + 1> start{};
    for (const std::uint64_t key : keys) ++start[((key >> shift) & (kBuckets - 1)) + 1];
    for (std::uint32_t b = 0; b < kBuckets; ++b) start[b + 1] += start[b];
    for (const std::uint64_t key : keys) sorted[start[(key >> shift) & (kBuckets - 1)]++] = key;
    keys.swap(sorted);
  }
  scratch.entities.resize(entities.size());
  for (std::size_t k = 0; k < keys.size(); ++k)
    scratch.entities[k] = entities[keys[k] & 0xffffffffu];
  entities.swap(scratch.entities);
}

void build_frame(const core::World& world, const ArchetypeTable& archetypes,
                 std::uint64_t world_epoch, bool with_entities, PublishedFrame* frame) {
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
  if (with_entities) {
    frame->entities.reserve(world.pedestrians().size() + world.vehicles().store().size() +
                            world.orphans().size());
    FrameBuilder b{world, archetypes, *frame, {}, world.scenario().step_us, {}};
    b.weights.prepare(world.scenario().tiers.importance, {}, {});
    b.live_entities();
    // Every pedestrian row is a pedestrian entity (the orphans add theirs).
    // Only on dot steps, when every client with dots wants them; a delta at
    // another step with dots (a baseline, or one coalescing a dot step)
    // counts them by walking the frame.
    if (frame->dot_step) {
      frame->chain_pedestrians.assign(world.lanes().chains().size(), 0);
      for (const core::LaneIndex lane : world.pedestrians().lane)
        ++frame->chain_pedestrians[world.lanes().chain_of(lane)];
    }
    thread_local SortScratch scratch;
    sort_by_index(frame->entities, scratch);
    b.orphans();
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
  build_frame(world, archetypes, world_epoch, true, frame.get());
  return frame;
}

std::shared_ptr<const PublishedFrame> FramePool::make(
    const core::World& world, const ArchetypeTable& archetypes, std::uint64_t world_epoch,
    std::span<const core::EntityId> awaiting_representation, bool with_entities) {
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
  build_frame(world, archetypes, world_epoch, with_entities, frame.get());
  frame->awaiting_representation.assign(awaiting_representation.begin(),
                                        awaiting_representation.end());
  return frame;
}

}  // namespace bustle::net
