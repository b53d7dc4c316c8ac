// bustle --json (json_output.hpp): each reply as a JSON object with stable
// snake_case keys, ids as index:generation, digests as 16 hex digits.
#include "json_output.hpp"

#include <flatbuffers/minireflect.h>

#include <algorithm>
#include <cinttypes>
#include <string>
#include <vector>

namespace bustle::cli::json {
namespace {
namespace wire = bustle::wire;
}  // namespace

std::string hex(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, value);
  return buf;
}

namespace {

// Builds a Json value from a FlatBuffer through the generated mini-reflection
// tables (flatc --reflect-names): field names, enum names and nesting come
// from the schema, so a new field of a printed table appears without a CLI
// edit. Absent strings read "", absent vectors [], absent tables null.
class JsonVisitor : public flatbuffers::IterationVisitor {
 public:
  Json result;

  void StartSequence() override { open(Json::object()); }
  void EndSequence() override { close(); }
  void StartVector() override { open(Json::array()); }
  void EndVector() override { close(); }
  void Field(std::size_t, std::size_t, flatbuffers::ElementaryType type, bool is_vector,
             const flatbuffers::TypeTable* ref, const char* name,
             const std::uint8_t* val) override {
    key_ = name;
    if (val != nullptr) return;
    if (is_vector) {
      put(Json::array());
    } else if (type == flatbuffers::ET_STRING) {
      put("");
    } else if (type == flatbuffers::ET_SEQUENCE && ref != nullptr &&
               ref->st == flatbuffers::ST_TABLE) {
      put(nullptr);
    } else {
      put(0);  // not written: packed with ForceDefaults, so only for a table from elsewhere
    }
  }
  void Bool(bool v) override { put(v); }
  void Char(std::int8_t v, const char* n) override { scalar(v, n); }
  void UChar(std::uint8_t v, const char* n) override { scalar(v, n); }
  void Short(std::int16_t v, const char* n) override { scalar(v, n); }
  void UShort(std::uint16_t v, const char* n) override { scalar(v, n); }
  void Int(std::int32_t v, const char* n) override { scalar(v, n); }
  void UInt(std::uint32_t v, const char* n) override { scalar(v, n); }
  void Long(std::int64_t v) override { put(v); }
  void ULong(std::uint64_t v) override { put(v); }
  void Float(float v) override { put(v); }
  void Double(double v) override { put(v); }
  void String(const flatbuffers::String* v) override { put(v->str()); }

 private:
  template <class T>
  void scalar(T v, const char* enum_name) {
    if (enum_name != nullptr) {
      put(enum_name);
    } else {
      put(v);
    }
  }
  void put(Json v) {
    if (stack_.empty()) {
      result = std::move(v);
    } else if (stack_.back().is_array()) {
      stack_.back().push_back(std::move(v));
    } else {
      stack_.back()[key_] = std::move(v);
    }
  }
  void open(Json container) {
    keys_.push_back(key_);
    stack_.push_back(std::move(container));
  }
  void close() {
    Json done = std::move(stack_.back());
    stack_.pop_back();
    key_ = keys_.back();
    keys_.pop_back();
    put(std::move(done));
  }
  std::vector<Json> stack_;
  std::vector<std::string> keys_;
  std::string key_;
};

}  // namespace

template <class Native>
Json reflect(const Native& native) {
  using Table = typename Native::TableType;
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);  // every scalar written, so none falls back to a default here
  fbb.Finish(Table::Pack(fbb, &native));
  JsonVisitor v;
  flatbuffers::IterateObject(
      fbb.GetBufferPointer() +
          flatbuffers::ReadScalar<flatbuffers::uoffset_t>(fbb.GetBufferPointer()),
      Table::MiniReflectTypeTable(), &v);
  return v.result;
}

Json stats(const client::StatsInfo& s) {
  Json j = reflect(s);  // every field of the schema's Stats, in schema order
  j["digest"] = hex(s.digest);
  for (std::size_t d = 0; d < s.districts.size(); ++d)
    j["districts"][d]["digest"] = hex(s.districts[d]->digest);
  return j;
}

Json job(const client::JobInfo& j) {
  Json out = reflect<wire::JobStatusT>(j);
  out["failed"] = j.failed();
  return out;
}

Json snapshot(const client::SnapshotEntry& e) {
  Json out = reflect(e);
  out["digest"] = hex(e.digest);
  return out;
}

Json garage(const client::GarageReport& g) {
  return reflect(g);
}

Json signal(const client::SignalReport& s) {
  return reflect(s);
}

Json zone(const client::ZoneReport& z) {
  return reflect(z);
}

Json vehicle(const client::VehicleReport& v) {
  return {{"id", client::id_text(v.entity())},
          {"vehicle_id", v.vehicle_id},
          {"garage", v.garage},
          {"request_id", v.request_id},
          {"prototype", v.prototype},
          {"route_index", v.route_index},
          {"lane", v.lane},
          {"s_m", v.s_m},
          {"alpha", v.alpha},
          {"x_m", v.x_m},
          {"y_m", v.y_m},
          {"speed_mps", v.speed_mps},
          {"strategy", wire::EnumNameVehicleStrategyState(v.strategy)},
          {"policy", wire::EnumNameControlPolicy(v.policy)},
          {"reason", wire::EnumNamePolicyReason(v.reason)},
          {"tier", wire::EnumNameSimTier(v.tier)},
          {"leader", v.has_leader() ? Json(client::id_text(v.leader_entity())) : Json(nullptr)},
          {"steps_advanced", v.steps_advanced},
          {"awaiting_turnaround", v.awaiting_turnaround},
          {"despawn_requested", v.despawn_requested}};
}

Json entity(const client::EntityReport& e) {
  const bool retiring = e.lifecycle == wire::LifecycleState::Retiring;
  return {{"id", client::id_text(e.entity_id())},
          {"kind", wire::EnumNameEntityKind(e.kind)},
          {"alive", e.alive},
          {"saveable", e.saveable},
          {"lifecycle", wire::EnumNameLifecycleState(e.lifecycle)},
          {"tier", wire::EnumNameSimTier(e.tier)},
          {"forced_full", e.forced_full},
          {"admission_masked", e.admission_masked},
          {"corpse", e.corpse},
          {"response_level", e.response_level},
          {"requested_tier", wire::EnumNameSimTier(e.requested_tier)},
          {"capacity_tier", wire::EnumNameSimTier(e.capacity_tier)},
          {"representation", wire::EnumNameRepresentationHint(e.representation)},
          {"priority", wire::EnumNamePriorityClass(static_cast<wire::PriorityClass>(e.priority))},
          {"origin", wire::EnumNamePedestrianOrigin(e.origin)},
          {"community", e.community},
          {"zone", e.zone},
          {"work_point", e.work_point},
          {"work_slot", e.work_slot},
          {"at_work_anchor", e.at_work_anchor},
          {"migrations", e.migrations},
          {"last_portal", e.last_portal.empty() ? Json(nullptr) : Json(e.last_portal)},
          {"lane", e.lane},
          {"s_m", e.s_m},
          {"x_m", e.x_m},
          {"y_m", e.y_m},
          {"effective_distance_m", e.effective_distance_m},
          {"spawn_handle", e.spawn_handle},
          {"spawn_state",
           e.spawn_handle != 0 ? Json(wire::EnumNameSpawnState(e.spawn_state)) : Json(nullptr)},
          {"retiring_reason", retiring ? Json(e.retiring_reason) : Json(nullptr)},
          {"release_step", retiring ? Json(e.release_step) : Json(nullptr)}};
}

namespace {

// population()'s lane_closures object.
Json lane_closures(const client::PopulationReport& p) {
  return {{"closed_lanes", p.closed_lanes},
          {"closed_lane_indices", p.closed_lane_indices},
          {"waiting_pedestrians", p.lane_waiting_pedestrians},
          {"waiting_vehicles", p.lane_waiting_vehicles},
          {"closures_total", p.lane_closures_total},
          {"openings_total", p.lane_openings_total},
          {"reroutes_total", p.lane_reroutes_total},
          {"dead_ends_total", p.lane_dead_ends_total},
          {"spawns_deferred_total", p.lane_spawns_deferred_total}};
}

}  // namespace

Json population(const client::PopulationReport& p) {
  Json communities = Json::array();
  for (const auto& c : p.communities) {
    if (!c) continue;
    communities.push_back({{"id", c->id},
                           {"base_population", c->base_population},
                           {"target", c->target},
                           {"zone", c->zone},
                           {"active", c->active},
                           {"dormant", c->dormant},
                           {"saveable", c->saveable}});
  }
  Json spawn_states = Json::object();
  const std::size_t states = std::max(p.spawn_live.size(), p.spawn_totals.size());
  for (std::size_t i = 0; i < states; ++i) {
    spawn_states[wire::EnumNameSpawnState(static_cast<wire::SpawnState>(i))] = {
        {"live", i < p.spawn_live.size() ? p.spawn_live[i] : 0u},
        {"total", i < p.spawn_totals.size() ? p.spawn_totals[i] : std::uint64_t{0}}};
  }
  Json observers = Json::array();
  for (std::size_t i = 0; i < p.observers_x_m.size() && i < p.observers_y_m.size(); ++i)
    observers.push_back({p.observers_x_m[i], p.observers_y_m[i]});
  Json tiers = Json::object();
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    tiers[wire::EnumNameSimTier(static_cast<wire::SimTier>(i))] = p.tiers[i];
  }
  return {{"hour", p.hour},
          {"time_scale", p.time_scale},
          {"lifecycle",
           {{"growth_quota", p.growth_quota},
            {"recycle_quota", p.recycle_quota},
            {"interval_ms", p.interval_ms},
            {"migration_budget", p.migration_budget}}},
          {"communities", communities},
          {"residents", p.residents},
          {"residents_active", p.residents_active},
          {"residents_retiring", p.residents_retiring},
          {"background", p.background},
          {"spawned", p.spawned},
          {"pedestrian_target", p.pedestrian_target},
          {"handoffs_pending", p.handoffs_pending},
          {"spawn_requested", p.spawn_requested},
          {"spawn_states", spawn_states},
          {"spawn_deferred_by_cap", p.spawn_deferred_by_cap},
          {"spawn_deferred_by_capacity", p.spawn_deferred_by_capacity},
          {"spawn_deferred_by_zone", p.spawn_deferred_by_zone},
          {"spawn_displaced_total", p.spawn_displaced_total},
          {"representation_budgets",
           {{"quality", p.quality},
            {"attached_in_use", p.attached_in_use},
            {"attached_limit", p.attached_limit},
            {"unattached_in_use", p.unattached_in_use},
            {"unattached_limit", p.unattached_limit},
            {"no_slot_total", p.no_slot_total}}},
          {"retiring", p.retiring},
          {"faded_total", p.faded_total},
          {"fade_skipped_total", p.fade_skipped_total},
          {"despawned_by_reason", p.despawned_by_reason},
          {"tiers", tiers},
          {"tier_promoted", p.tier_promoted},
          {"tier_demoted", p.tier_demoted},
          {"tier_deferred", p.tier_deferred},
          {"forced_full", p.forced_full},
          {"forced_overflow", p.forced_overflow},
          {"force_full_refused", p.force_full_refused},
          {"admission_masked", p.admission_masked},
          {"observers", observers},
          {"followed", p.followed != nullptr
                           ? Json(client::id_text(client::EntityId::from_wire(*p.followed)))
                           : Json(nullptr)},
          {"follow_first_vehicle", p.follow_first_vehicle},
          {"prevention",
           {{"level", p.prevention_level},
            {"units_queued", p.units_queued},
            {"units_active", p.units_active},
            {"units_retiring", p.units_retiring},
            {"level_queued", p.level_queued},
            {"level_spawned", p.level_spawned},
            {"level_canceled", p.level_canceled},
            {"level_despawned", p.level_despawned},
            {"level_lost", p.level_lost},
            {"level_capped", p.level_capped},
            {"corpses", p.corpses},
            {"corpses_killed", p.corpses_killed},
            {"corpses_soft_deleted", p.corpses_soft_deleted},
            {"corpses_force_deleted", p.corpses_force_deleted},
            {"corpses_pressure_deleted", p.corpses_pressure_deleted}}},
          {"lane_closures", lane_closures(p)},
          {"ledger",
           {{"fragments", p.ledger_fragments},
            {"deficit", p.ledger_deficit},
            {"surplus", p.ledger_surplus},
            {"max_deficit", p.ledger_max_deficit}}}};
}

Json spawn(const client::SpawnStatusInfo& s) {
  const bool any_lane = s.lane == client::SpawnStatusInfo::kNoLane;
  return {{"handle", s.handle},
          {"state", wire::EnumNameSpawnState(s.state)},
          {"failure", wire::EnumNameSpawnFailure(s.failure)},
          {"terminal", s.terminal},
          {"entity", s.entity_id() == client::EntityId{} ? Json(nullptr)
                                                         : Json(client::id_text(s.entity_id()))},
          {"zone", s.zone.empty() ? Json(nullptr) : Json(s.zone)},
          {"lane", any_lane ? Json(nullptr) : Json(s.lane)},
          {"priority", wire::EnumNamePriorityClass(static_cast<wire::PriorityClass>(s.priority))},
          {"requested_step", s.requested_step},
          {"state_step", s.state_step}};
}

void print(std::FILE* out, const Json& value) {
  const std::string text = value.dump();
  std::fprintf(out, "%s\n", text.c_str());
  std::fflush(out);
}

}  // namespace bustle::cli::json
