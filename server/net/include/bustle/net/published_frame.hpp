// What the sim thread publishes after every step for the network side.
//
// The sim thread writes every entity once per step into a PublishedFrame
// (immutable, shared by all clients): its lane-relative pose in the wire's
// units, its position for interest and hints, and what a renderer needs to
// know about it. Each session then selects, ranks and diffs it for its own
// client (stream_tracker.hpp). Nothing here refers back to the World, so the
// network thread never touches simulation state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bustle/core/entity_id.hpp"
#include "bustle/core/world.hpp"
#include "bustle/net/coverage.hpp"

namespace bustle::net {

// Labels are formatted only when an entity enters a client's stream; the
// frame keeps a reference: 0 = none, else kind in the top byte.
inline constexpr std::uint64_t kLabelVehicle = 1ull << 56;   // | garage << 40 | ordinal
inline constexpr std::uint64_t kLabelResident = 2ull << 56;  // | resident index
inline constexpr std::uint64_t kLabelText = 3ull << 56;  // | index into PublishedFrame::label_texts

struct PublishedEntity {
  core::EntityId id;
  core::LaneIndex lane = 0;
  // The server's pose at this step, on the wire's grid: the simulated pose
  // extrapolated along the lane by the steps since the entity was last
  // simulated (0 for Full; strided tiers in between), clamped to the lane's
  // length_mm. This is exactly what the clients' dead reckoning reproduces.
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
  double x_m = 0.0;  // position at s_mm (interest and hints)
  double y_m = 0.0;
  float z_m = 0.0f;
  float weight = 1.0f;  // importance weight: class x type x area (importance.hpp)
  std::uint16_t archetype = 0;
  core::EntityKind kind = core::EntityKind::Pedestrian;
  std::uint8_t sim_tier = 0;  // core::SimTier
  std::uint8_t policy = 0;    // core::ControlPolicy (vehicles)
  // In the orphan set, fading out (lifecycle Retiring): still streamed,
  // standing still, until final deletion; announced once (Delta.retiring).
  bool retiring = false;
  // A corpse (KillPedestrian, awaiting corpse cleanup), and still one while
  // its cleanup fades it out: EntityEnter.corpse on entering, an EntityChange
  // (field Corpse) when it dies while received. Derived from the corpse list
  // (or the orphan's corpse despawn reason), never digested on its own.
  bool corpse = false;
  std::uint64_t label = 0;  // kLabel* reference, 0 = none
};

// The smallest box holding a set of positions (empty: min > max).
struct Bounds {
  double min_x_m = std::numeric_limits<double>::infinity();
  double min_y_m = std::numeric_limits<double>::infinity();
  double max_x_m = -std::numeric_limits<double>::infinity();
  double max_y_m = -std::numeric_limits<double>::infinity();
  void add(double x_m, double y_m) {
    min_x_m = std::min(min_x_m, x_m);
    min_y_m = std::min(min_y_m, y_m);
    max_x_m = std::max(max_x_m, x_m);
    max_y_m = std::max(max_y_m, y_m);
  }
  void add(const Bounds& b) {
    min_x_m = std::min(min_x_m, b.min_x_m);
    min_y_m = std::min(min_y_m, b.min_y_m);
    max_x_m = std::max(max_x_m, b.max_x_m);
    max_y_m = std::max(max_y_m, b.max_y_m);
  }
};

struct PublishedFrame {
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  // Bumped whenever the world is replaced (restore, load): sessions then send
  // a baseline, because ids of the old and new world must not be diffed.
  std::uint64_t world_epoch = 0;
  // False when the frame was built while no client was subscribed: then
  // `entities` is empty whatever the world holds (nobody would read it) and
  // sessions wait for a frame built in full. Everything else is filled.
  bool entities_built = true;
  // The part of the city `entities` holds (coverage.hpp): every entity when
  // whole, else those on the lanes that reach into its discs. A session
  // encodes only from a frame that covers its interest.
  Coverage coverage;
  std::vector<PublishedEntity> entities;  // sorted by id.index, unique indices
  // Labels given as text (kLabelText): a gateway passes on the names its
  // districts sent (a car's VehicleId), which it cannot rebuild from ids.
  std::vector<std::string> label_texts;
  // Of every entity's (x_m, y_m): the spatial index's grid. Gathered while
  // the entities are built (in their parts), so the network thread does not
  // walk the frame once more for it.
  Bounds bounds;
  std::vector<std::uint8_t> signal_phases;  // per scenario signal (core::SignalPhase)
  // Per lane chain: the pedestrian entities of `entities` on it. A client's
  // dots are this minus the pedestrians it receives, so they cost it what it
  // receives, not a walk over the whole frame. Filled on dot steps and in
  // every frame that leaves some entity out (empty otherwise: a client's
  // dots are then counted by a walk). A frame whose discs reach every lane
  // end to end leaves none out: it is built as a whole one.
  std::vector<std::uint32_t> chain_pedestrians;
  // The world's observers (scenario + SetObservers): clients without
  // observers of their own are ranked from these, like the tier resolver.
  std::vector<core::Vec2> observers;
  std::vector<core::ObserverView> observer_views;
  // Spawned entities whose handle waits for a representation (Registered in
  // the core, or RepresentationRequested on the representation axis), sorted
  // by packed id: a lease naming one is forwarded to the sim thread.
  std::vector<core::EntityId> awaiting_representation;
  // Dot steps (step % pedestrians.dots_every_steps == 0) only: dots are
  // computed per client from the entities it does not receive.
  bool dot_step = false;
};

// Welcome.archetypes and how entities map onto it: "pedestrian" (index 0:
// background and spawned pedestrians), "pedestrian.<community>.<profession>"
// for residents (a community without professions: "pedestrian.<community>"),
// "vehicle.<prototype>" (one entry per distinct prototype name).
struct ArchetypeTable {
  std::vector<std::string> names;
  std::vector<std::uint16_t> community_first;  // per community: its first profession's entry
  std::vector<std::vector<std::uint16_t>> garage_prototype;  // per garage, per prototype index
};
ArchetypeTable make_archetypes(const core::Scenario& scenario);

// Builds the frame for the world's current step (sim thread): pedestrians,
// vehicles and the orphans still fading (retiring), sorted by index; signal
// phases; observers. Pass the world's archetype table (built once).
std::shared_ptr<const PublishedFrame> make_published_frame(const core::World& world,
                                                           const ArchetypeTable& archetypes,
                                                           std::uint64_t world_epoch = 0);

// Frames for one publisher (the sim thread), reused once nobody else holds
// them: a frame of 100 000 entities is 6 MB, and building it into memory that
// is already mapped saves the page faults of a fresh allocation every step.
// With `with_entities` false the frame carries everything but the entities
// (PublishedFrame::entities_built): what the sim thread publishes while no
// client is subscribed. `coverage` says which entities it poses (the
// sessions' CoverageRegistry::current()).
class FramePool {
 public:
  std::shared_ptr<const PublishedFrame> make(
      const core::World& world, const ArchetypeTable& archetypes, std::uint64_t world_epoch,
      std::span<const core::EntityId> awaiting_representation = {}, bool with_entities = true,
      const Coverage& coverage = {});

 private:
  std::vector<std::shared_ptr<PublishedFrame>> frames_;  // at most kFramePoolSize
  LaneCoverage lane_coverage_;
};
inline constexpr std::size_t kFramePoolSize = 4;

}  // namespace bustle::net
