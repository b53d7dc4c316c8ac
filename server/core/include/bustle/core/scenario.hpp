// The scenario: everything a World is created from, as plain data.
//
// The core never parses files. server/scenario turns JSON into this struct and
// reports syntax and type errors; validate_scenario() below checks the semantic
// rules (unique ids, known successors, positive lengths, ranges) and names the
// path of every offending field, so the same checks guard scenarios built in
// code (tests, benches) and scenarios read from disk.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bustle/core/status.hpp"

namespace bustle::core {

enum class LaneKind : std::uint8_t { Sidewalk = 0, Crossing = 1, Road = 2 };

constexpr bool is_pedestrian_lane(LaneKind k) {
  return k == LaneKind::Sidewalk || k == LaneKind::Crossing;
}

struct Vec2 {
  double x_m = 0.0;
  double y_m = 0.0;
  friend bool operator==(const Vec2&, const Vec2&) = default;
};

struct LaneSpec {
  std::string id;
  LaneKind kind = LaneKind::Sidewalk;
  std::vector<Vec2> points;  // polyline, at least two points
  double speed_mps_limit = 1.4;
  std::vector<std::string> successors;  // lane ids
  double elevation_m = 0.0;             // height of the lane (bridges, decks): an importance input
};

struct PedestrianSpec {
  std::uint32_t count = 0;               // target population on sidewalks
  std::uint32_t spawn_per_step_max = 8;  // creation cap per step
  // Lane density ledger: sidewalks are cut into fragments of this length; the
  // background target is shared among them by length, and spawning fills the
  // largest deficit first while trimming takes from the largest surplus.
  double fragment_length_m = 25.0;
  // Distant dots (anonymous density per lane chain) go to clients every N steps.
  std::uint32_t dots_every_steps = 10;
};

// Spawn pipeline (DESIGN §3): requests become handles that move through
// graded stages; at most per_step_cap identities are created per step.
struct SpawnSettings {
  std::uint32_t per_step_cap = 8;
  std::uint32_t queue_depth = 1024;   // live (non-terminal) handles at most
  std::uint32_t timeout_ms = 10'000;  // Queued/IdentityCreated longer than this -> TimedOut
};

// Despawn phase: entities that may still be on screen fade for fade_ms before
// their id is released; Coarse (far, off-screen) ones are deleted at once.
struct DespawnSettings {
  std::uint32_t fade_ms = 1'000;
  double out_of_range_m =
      0.0;  // background pedestrians farther than this from every observer leave; 0 = off
  std::uint32_t stuck_ms =
      0;  // an off-screen (Coarse) vehicle that has not moved for this long leaves; 0 = off
};

// Prevention (prevention.hpp): response units by level and corpse cleanup.
struct PreventionSpec {
  // units_per_level[L - 1] units are queued when level L is reached (levels
  // 1..size(); empty: only level 0 exists). [Limit: at most 8 levels]
  std::vector<std::uint32_t> units_per_level;
  std::uint32_t spawn_per_step = 1;          // Queued units placed per step
  std::uint32_t max_units = 32;              // live units at most (hard cap)
  double ring_min_m = 20.0;                  // units appear on sidewalks this far
  double ring_max_m = 80.0;                  // ... up to this far from the first observer
  std::uint32_t cleanup_every_steps = 10;    // corpse cleanup cadence
  double corpse_keep_m = 40.0;               // nearer: kept
  double corpse_force_m = 150.0;             // farther: deleted at once; between: soft delete
  std::uint32_t corpse_pressure_count = 16;  // more corpses than this may trigger pressure
  std::uint32_t pressure_entities = 0;       // live-entity limit (0 = entity_capacity)
};

// Vehicles (DESIGN §4). Defaults are seed 003's.
enum class RouteEnd : std::uint8_t { Loop = 0, Garage = 1 };

struct GarageSpec {
  std::string id;
  std::string lane;                // entrance lane (must be route[0])
  std::vector<std::string> route;  // lane ids, each a successor of the previous
  RouteEnd route_end = RouteEnd::Loop;
  std::vector<std::string> prototypes;  // vehicle prototypes this garage can dispatch
  std::uint32_t capacity = 18;          // managed vehicles at most
  std::uint32_t queue_depth = 26;
  std::uint32_t dispatch_per_step_max = 1;
  std::uint32_t cooldown_frames = 8;  // queue frames suppressed after a dispatch
  double entrance_clear_m = 8.0;      // no vehicle in the first N m of the entrance lane
  // The garage mouth (vehicles.hpp): dispatched vehicles that wait, front
  // first, for the entrance, at most this many (counted against capacity).
  // 0: no mouth, a request is dispatched only onto a clear entrance.
  std::uint32_t mouth_capacity = 0;
  // How this garage's VehicleIds read: literal text with {garage} (the
  // garage id), {scenario} (the scenario id) and {ordinal} (the garage's
  // dispatch ordinal, 6 digits zero-padded; required, so ids never repeat).
  std::string vehicle_id_format = "vehicle.{garage}.{ordinal}";
};

// A garage's VehicleId for dispatch ordinal `ordinal` (GarageSpec::vehicle_id_format).
std::string format_vehicle_id(const std::string& format, const std::string& garage,
                              const std::string& scenario, std::uint64_t ordinal);
// Ok when `format` is a valid vehicle_id_format, else InvalidArgument saying why not.
Status check_vehicle_id_format(const std::string& format);
// The expanded texts before and after {ordinal} of a valid format.
std::pair<std::string, std::string> vehicle_id_affixes(const std::string& format,
                                                       const std::string& garage,
                                                       const std::string& scenario);

struct SignalSpec {
  std::string id;
  std::string lane;           // the controlled lane
  double stop_alpha = 0.82;   // stop line as a fraction of the lane length
  double yield_alpha = 0.35;  // yield approach starts here
  std::uint32_t open_ms = 4000;
  std::uint32_t yield_ms = 2000;
  std::uint32_t closed_ms = 4000;
  std::uint32_t offset_ms = 0;  // phase offset at step 0
};

struct PlannedRequest {
  std::string request_id;
  std::string garage;
  std::string prototype;
  std::string lane;
  std::int32_t priority = 10;
};

// Requests offered to garages over time by the content plan.
struct VehiclePlanSpec {
  std::uint32_t batch_size = 3;
  std::uint32_t batch_interval_steps = 10;
  std::vector<PlannedRequest> requests;
};

struct VehicleRules {
  double headway_block_m = 8.0;     // leader at or closer: no movement
  double headway_caution_m = 14.0;  // leader closer than this: yield
  double yield_multiplier = 0.35;
  double pedestrian_hazard_m = 12.0;  // look-ahead to an occupied crossing
};

// Importance (DESIGN §3): tiers are resolved on an effective distance,
//   d_eff = (d_xy + height_weight x |dz|) x (behind_factor if behind the
//           observer's view direction) / (class x type x area weight),
// the minimum over observers. Larger weights pull an entity nearer.
enum class PriorityClass : std::uint8_t { Story = 0, Quest = 1, Community = 2, Background = 3 };
inline constexpr std::size_t kPriorityClassCount = 4;

struct AreaOfInterest {
  std::string id;
  Vec2 center;
  double radius_m = 50.0;
  double weight = 2.0;  // >= 1: entities inside count as nearer
};

struct ImportanceSpec {
  double class_weight[kPriorityClassCount] = {4.0, 2.0, 1.25,
                                              1.0};  // story > quest > community > background
  double pedestrian_weight = 1.0;                    // type weight
  double vehicle_weight = 1.0;
  double height_weight = 2.0;  // metres of d_eff per metre of height difference
  double behind_factor = 1.5;  // behind an observer with a view direction
  std::vector<AreaOfInterest> areas;
};

// Simulation-tier resolution (distance with hysteresis, caps, budget).
struct TierSpec {
  double full_enter_m = 25.0;
  double full_exit_m = 30.0;
  double simulated_enter_m = 500.0;
  double simulated_exit_m = 550.0;
  std::uint32_t full_cap = 4096;
  std::uint32_t simulated_cap = 65536;
  std::uint32_t transitions_per_step = 256;
  // Each pedestrian is re-resolved every N steps: every step resolves the
  // 1/N slice whose id phase matches (as strides are spread), so no step pays
  // for all of them; tiers change slowly next to 8-step strides.
  std::uint32_t pedestrian_resolve_every_steps = 4;
  // The same for vehicles, on their own cadence.
  std::uint32_t vehicle_resolve_every_steps = 4;
  // Absolute limit on Full entities per kind, ForceFull included: ForceFull
  // bypasses full_cap but never this.
  std::uint32_t hard_full_cap = 8192;
  ImportanceSpec importance;
};

// Population orchestration (DESIGN §3): zones, communities with day
// schedules, work-points, and the lifecycle coordinator's settings.
enum class SchedulePhase : std::uint8_t {
  Home = 0,
  CommuteToWork = 1,
  Work = 2,
  Leisure = 3,
  CommuteHome = 4
};

struct ZoneSpec {
  std::string id;
  std::vector<std::string> lanes;  // sidewalk lanes where its members walk
  std::uint32_t capacity = 256;    // density budget: active members at most
};

struct ScheduleEntry {
  double start_hour = 0.0;  // [0, 24); start > end crosses midnight
  double end_hour = 24.0;   // (0, 24]
  SchedulePhase phase = SchedulePhase::Home;
  std::string activity;
  std::string zone;        // where the community's active members are
  std::string work_point;  // optional
  double density = 1.0;    // share of base_population active, [0, 1]
};

struct CommunitySpec {
  std::string id;
  std::uint32_t base_population = 0;
  std::vector<std::string> professions;  // members take them in turn
  bool saveable = false;                 // identities persist in saves
  std::string home_zone;
  std::vector<ScheduleEntry> schedule;  // must cover [0, 24) exactly once
};

// Where a work-point's slots are (seed 000 §6: work-points are spatial
// anchors). Optional: without one the slots have no place and residents who
// take a slot keep walking. Slot k stands on `lane` at s_m + k x
// slot_spacing_m; the lane is a sidewalk of the work-point's zone and every
// slot lies in [0, length) of it.
struct WorkPointAnchorSpec {
  std::string lane;
  double s_m = 0.0;
  double slot_spacing_m = 1.0;
};

struct WorkPointSpec {
  std::string id;
  std::string zone;
  std::string profession;
  std::uint32_t slots = 1;
  bool has_anchor = false;
  WorkPointAnchorSpec anchor{};  // meaningful when has_anchor
  // Distance along anchor.lane of slot k (has_anchor only).
  double slot_s_m(std::uint32_t k) const {
    return anchor.s_m + static_cast<double>(k) * anchor.slot_spacing_m;
  }
};

struct PopulationSettings {
  double start_hour = 6.0;       // time of day at step 0
  std::uint32_t time_scale = 1;  // game seconds per simulated second
  std::uint32_t lifecycle_interval_ms = 250;
  std::uint32_t growth_quota = 2;   // per zone per interval
  std::uint32_t recycle_quota = 2;  // per zone per interval
  std::uint32_t migration_budget =
      4;  // dormant records moved between zones, per interval (all zones)
};

// What the first observer does from start-up (seed 003's observer follows the
// first vehicle). FirstVehicle: it stands at observers[0] (or nowhere) until a
// vehicle is on the road, then follows the first one as SetObservers.follow
// does; an operator SetObservers before that cancels the wait.
enum class ObserverFollow : std::uint8_t { None = 0, FirstVehicle = 1 };

// One district of a city split across servers (docs/scenario-format.md,
// "Districts"): what it owns, by id. With a district map every lane, zone,
// work point, garage and signal belongs to exactly one district, and a
// district's border lanes are exactly its lanes with a successor in another
// district. The map is configuration: it is never simulation state, so it
// changes no digest and no checkpoint.
struct DistrictSpec {
  std::string id;
  std::vector<std::string> lanes;
  std::vector<std::string> zones;
  std::vector<std::string> work_points;
  std::vector<std::string> garages;
  std::vector<std::string> signals;
  std::vector<std::string> border_lanes;  // of `lanes`, those leading into another district
};

struct Scenario {
  std::string id;                   // stable identifier, sent in Welcome and saved in snapshots
  std::string name;                 // human-readable
  std::uint32_t step_us = 100'000;  // fixed step; 100 ms = 10 Hz
  std::uint32_t entity_capacity = 65'536;  // fixed at world creation
  std::uint32_t command_inbox_capacity = 1'024;
  std::vector<LaneSpec> lanes;
  PedestrianSpec pedestrians;
  std::vector<GarageSpec> garages;
  std::vector<SignalSpec> signals;
  VehiclePlanSpec vehicle_plan;
  VehicleRules vehicle_rules;
  TierSpec tiers;
  std::vector<Vec2> observers;  // initial observers (replaced by SetObservers)
  ObserverFollow observer_follow = ObserverFollow::None;
  std::vector<ZoneSpec> zones;
  std::vector<CommunitySpec> communities;
  std::vector<WorkPointSpec> work_points;
  PopulationSettings population;
  SpawnSettings spawn;
  DespawnSettings despawn;
  PreventionSpec prevention;
  std::vector<DistrictSpec> districts;  // empty: one server holds the whole city
  // The district this world owns (index into `districts`), or -1: the whole
  // city. A district server sets it from --district; the file's optional
  // "own_district" (a district id) carries it into recordings
  // (world_districts.cpp says what a district world does).
  std::int32_t own_district = -1;
};

// The schedule entry in force at `hour` ([0, 24)), or -1. Entries must have
// passed validation (exact cover), so at most one matches.
int schedule_entry_at(const std::vector<ScheduleEntry>& schedule, double hour);

struct ScenarioError {
  std::string path;     // e.g. "lanes[3].successors[0]"
  std::string message;  // e.g. "unknown lane id 'x9'"
};

// The district map's rules (validate_scenario runs them; scenario_districts.cpp):
// ids known and unique, every owned thing owned exactly once, each thing in
// the district of the lane or zone it stands on, border lanes exactly those
// with a successor in another district. Nothing when `districts` is empty.
// With own_district set: a district of the map, and a city a district world
// can run so far (pedestrians only: no zones, work points or garages).
std::vector<ScenarioError> validate_districts(const Scenario& s);
inline constexpr std::size_t kDistrictsMax = 256;

// Limits enforced by validation; documented in schema/scenario.schema.json.
inline constexpr std::uint32_t kStepUsMin = 1'000;      // 1000 Hz
inline constexpr std::uint32_t kStepUsMax = 1'000'000;  // 1 Hz
inline constexpr std::uint32_t kEntityCapacityMax = 1u << 24;
inline constexpr std::uint32_t kInboxCapacityMax = 1u << 20;
inline constexpr double kLaneLengthMinM = 0.01;
// World extent: every coordinate a scenario places (lane points, observers,
// area-of-interest centres) satisfies |x|, |y| <= kWorldExtentM, a 200 km
// square, and no lane is longer than kLaneLengthMaxM. Entities move along lane
// polylines, so their positions stay inside it too. The wire places entities
// in unsigned 32-bit millimetres along their lane (proto/motion.hpp: 100 km is
// 1e8 mm, well under 2^32), and the lane density ledger cuts sidewalks into
// fragments of at least 1 m (at most 10^5 per lane). Found by fuzzing: an
// 8e15 m lane overflowed the fragment count.
inline constexpr double kWorldExtentM = 100'000.0;
inline constexpr double kLaneLengthMaxM = 100'000.0;
inline constexpr double kSpeedMpsMax = 100.0;

// Returns every semantic error found (empty = valid). Never throws.
std::vector<ScenarioError> validate_scenario(const Scenario& scenario);

}  // namespace bustle::core
