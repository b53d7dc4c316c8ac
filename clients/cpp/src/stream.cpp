// Welcome and Delta decoded from wire tables into the SDK's own types
// (stream.hpp).
#include "bustle/client/stream.hpp"

#include <span>

#include "wire_util.hpp"

namespace bustle::client {

namespace wire = bustle::wire;
using detail::str;
using detail::to_vector;
using detail::unpack;

// The SDK enums mirror the schema's values.
static_assert(static_cast<int>(SimTier::Coarse) == static_cast<int>(wire::SimTier::MAX));
static_assert(static_cast<int>(RepresentationHint::None) ==
              static_cast<int>(wire::RepresentationHint::MAX));
static_assert(static_cast<int>(ControlPolicy::DespawnPending) ==
              static_cast<int>(wire::ControlPolicy::MAX));
static_assert(static_cast<int>(EntityField::Corpse) == static_cast<int>(wire::EntityField::MAX));

namespace {

// True when `value` is one of the enum's values (0..MAX).
template <class WireEnum>
bool in_range(std::uint8_t value) {
  return value <= static_cast<std::uint8_t>(WireEnum::MAX);
}

std::string not_a(const char* list, std::size_t i, const char* field, unsigned value,
                  const char* type) {
  return std::string(list) + "[" + std::to_string(i) + "]." + field + ": " + std::to_string(value) +
         " is not a valid " + type;
}

}  // namespace

const char* to_string(EntityKind v) {
  return wire::EnumNameEntityKind(static_cast<wire::EntityKind>(v));
}
const char* to_string(SimTier v) {
  return wire::EnumNameSimTier(static_cast<wire::SimTier>(v));
}
const char* to_string(RepresentationHint v) {
  return wire::EnumNameRepresentationHint(static_cast<wire::RepresentationHint>(v));
}
const char* to_string(ControlPolicy v) {
  return wire::EnumNameControlPolicy(static_cast<wire::ControlPolicy>(v));
}
const char* to_string(EntityField v) {
  return wire::EnumNameEntityField(static_cast<wire::EntityField>(v));
}

LaneGeometry to_lane_geometry(const wire::LaneInfo& l) {
  LaneGeometry out;
  out.index = l.index();
  out.id = str(l.id());
  out.kind = l.kind();
  // Copied before reading: a verified [Vec2d] need not be 8-byte aligned.
  for (const wire::Vec2d& p : proto::copy_struct_vector(l.points()))
    out.points.push_back({p.x(), p.y()});
  out.length_m = l.length_m();
  out.speed_mps_limit = l.speed_mps_limit();
  out.successors = to_vector(l.successors());
  out.length_mm = l.length_mm();
  out.elevation_m = l.elevation_m();
  return out;
}

GarageGeometry to_garage_geometry(const wire::GarageGeometry& g) {
  return unpack(g);
}

SignalGeometry to_signal_geometry(const wire::SignalGeometry& g) {
  return unpack(g);
}

LaneChain to_lane_chain(const wire::LaneChainInfo& c) {
  return unpack(c);
}

WelcomeInfo to_welcome_info(const wire::Welcome& w) {
  WelcomeInfo info;
  info.server_version = str(w.server_version());
  info.protocol_version = w.protocol_version();
  info.session_id = w.session_id();
  info.role = w.role();
  info.step_us = w.step_us();
  info.clock_mode = w.clock_mode();
  info.scenario_id = str(w.scenario_id());
  info.current_step = w.current_step();
  if (const auto* lanes = w.lanes()) {
    info.lanes.reserve(lanes->size());
    for (const wire::LaneInfo* l : *lanes) info.lanes.push_back(to_lane_geometry(*l));
  }
  if (const auto* garages = w.garages()) {
    for (const wire::GarageGeometry* g : *garages) info.garages.push_back(to_garage_geometry(*g));
  }
  if (const auto* signals = w.signals()) {
    for (const wire::SignalGeometry* g : *signals) info.signals.push_back(to_signal_geometry(*g));
  }
  if (const auto* chains = w.chains()) {
    for (const wire::LaneChainInfo* lc : *chains) info.chains.push_back(to_lane_chain(*lc));
  }
  info.dots_every_steps = w.dots_every_steps();
  if (const auto* archetypes = w.archetypes()) {
    info.archetypes.reserve(archetypes->size());
    for (const flatbuffers::String* a : *archetypes) info.archetypes.push_back(str(a));
  }
  return info;
}

proto::LanePolyline lane_polyline(const LaneGeometry& lane) {
  std::vector<double> xs, ys;
  xs.reserve(lane.points.size());
  ys.reserve(lane.points.size());
  for (const LanePoint& p : lane.points) {
    xs.push_back(p.x_m);
    ys.push_back(p.y_m);
  }
  return proto::LanePolyline::from_points(xs, ys, static_cast<double>(lane.elevation_m),
                                          lane.length_mm);
}

std::vector<proto::LanePolyline> lane_polylines(const WelcomeInfo& welcome) {
  std::vector<proto::LanePolyline> out;
  out.reserve(welcome.lanes.size());
  for (const LaneGeometry& lane : welcome.lanes) out.push_back(lane_polyline(lane));
  return out;
}

std::string decode_delta(const wire::Delta& d, Delta& out) {
  out = Delta{};
  out.step = d.step();
  out.sim_time_us = d.sim_time_us();
  out.digest = d.digest();
  out.baseline = d.baseline();
  if (const auto* entered = d.entered()) {
    out.entered.reserve(entered->size());
    for (std::size_t i = 0; i < entered->size(); ++i) {
      const wire::EntityEnter& e = *entered->Get(static_cast<flatbuffers::uoffset_t>(i));
      const auto kind = static_cast<std::uint8_t>(e.kind());
      const auto tier = static_cast<std::uint8_t>(e.sim_tier());
      const auto rep = static_cast<std::uint8_t>(e.representation());
      const auto policy = static_cast<std::uint8_t>(e.policy());
      if (!in_range<wire::EntityKind>(kind)) return not_a("entered", i, "kind", kind, "EntityKind");
      if (!in_range<wire::SimTier>(tier)) return not_a("entered", i, "sim_tier", tier, "SimTier");
      if (!in_range<wire::RepresentationHint>(rep)) {
        return not_a("entered", i, "representation", rep, "RepresentationHint");
      }
      if (!in_range<wire::ControlPolicy>(policy))
        return not_a("entered", i, "policy", policy, "ControlPolicy");
      out.entered.push_back(EnteredEntity{
          EntityId::from_wire(e.id()), e.lane(), e.s_mm(), e.speed_mmps(), e.archetype(),
          static_cast<EntityKind>(kind), static_cast<SimTier>(tier),
          static_cast<RepresentationHint>(rep), static_cast<ControlPolicy>(policy), e.corpse()});
    }
  }
  if (const auto* labels = d.labels()) {
    out.labels.reserve(labels->size());
    for (const wire::EntityLabel* l : *labels) out.labels.push_back({l->index(), str(l->label())});
  }
  if (const auto* motion = d.motion()) {
    out.motion_bytes = motion->size();
    if (std::string error = proto::read_motion(
            std::span<const std::uint8_t>(motion->data(), motion->size()), out.motion);
        !error.empty()) {
      return error;
    }
  }
  if (const auto* changes = d.changes()) {
    out.changes.reserve(changes->size());
    for (std::size_t i = 0; i < changes->size(); ++i) {
      const wire::EntityChange& c = *changes->Get(static_cast<flatbuffers::uoffset_t>(i));
      const auto field = static_cast<std::uint8_t>(c.field());
      if (!in_range<wire::EntityField>(field))
        return not_a("changes", i, "field", field, "EntityField");
      const auto f = static_cast<EntityField>(field);
      // A corpse never comes back to life: its change carries 1 only.
      const bool ok = f == EntityField::SimTier ? in_range<wire::SimTier>(c.value())
                      : f == EntityField::Representation
                          ? in_range<wire::RepresentationHint>(c.value())
                      : f == EntityField::Policy ? in_range<wire::ControlPolicy>(c.value())
                                                 : c.value() == 1;
      if (!ok) {
        const char* type = f == EntityField::SimTier          ? "SimTier"
                           : f == EntityField::Representation ? "RepresentationHint"
                           : f == EntityField::Policy         ? "ControlPolicy"
                                                              : "Corpse (only 1)";
        return not_a("changes", i, "value", c.value(), type);
      }
      out.changes.push_back({c.index(), f, c.value()});
    }
  }
  if (const auto* left = d.left()) {
    out.left.reserve(left->size());
    for (const wire::EntityId* id : *left) out.left.push_back(EntityId::from_wire(*id));
  }
  if (const auto* signals = d.signals()) {
    out.signals.reserve(signals->size());
    for (const wire::SignalPhaseState* p : *signals)
      out.signals.push_back({p->index(), p->phase()});
  }
  if (const auto* dots = d.dots()) {
    std::vector<ChainDotsEntry> v;
    v.reserve(dots->size());
    for (const wire::ChainDots* c : *dots) v.push_back({c->chain(), c->count()});
    out.dots = std::move(v);
  }
  if (const auto* retiring = d.retiring()) {
    out.retiring.reserve(retiring->size());
    for (const wire::EntityId* id : *retiring) out.retiring.push_back(EntityId::from_wire(*id));
  }
  out.interest_truncated = d.interest_truncated();
  return {};
}

}  // namespace bustle::client
