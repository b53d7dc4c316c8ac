// CityMerger (city_merger.hpp): district mirrors in, one city frame out.
#include "bustle/gateway/city_merger.hpp"

#include <algorithm>

#include "bustle/core/digest.hpp"
#include "bustle/proto/motion.hpp"

namespace bustle::gateway {

namespace {

// An entity is in transit for the step it left in and the next one (the
// receiver applies border arrivals one step later); after that nobody
// adopted it.
constexpr std::uint64_t kTransitSteps = 2;

// The mirrors' lanes. Poses come from LaneGraph (add_entity); a strict
// mirror needs the Welcome's lanes to refuse a lane index a district should
// never send.
std::vector<proto::LanePolyline> polylines(const core::LaneGraph& lanes) {
  std::vector<proto::LanePolyline> out;
  out.reserve(lanes.size());
  for (std::uint32_t l = 0; l < lanes.size(); ++l) {
    const core::Lane& lane = lanes.lane(l);
    std::vector<double> xs, ys;
    for (const core::Vec2& p : lane.points) {
      xs.push_back(p.x_m);
      ys.push_back(p.y_m);
    }
    out.push_back(
        proto::LanePolyline::from_points(xs, ys, lane.elevation_m, proto::to_mm(lane.length_m)));
  }
  return out;
}

}  // namespace

CityMap make_city_map(const core::Scenario& scenario, const core::LaneGraph& lanes) {
  CityMap m;
  m.lane_owner.assign(lanes.size(), 0);
  m.lane_borders.assign(lanes.size(), 0);
  m.signal_owner.assign(scenario.signals.size(), 0);
  const std::vector<std::int16_t> owners = core::lane_districts(scenario, lanes);
  for (std::size_t l = 0; l < owners.size(); ++l)
    m.lane_owner[l] = static_cast<std::uint16_t>(std::max<std::int16_t>(owners[l], 0));
  std::map<std::string, std::uint16_t> signal_district;
  for (std::size_t d = 0; d < scenario.districts.size(); ++d) {
    const core::DistrictSpec& spec = scenario.districts[d];
    m.district_ids.push_back(spec.id);
    for (const std::string& id : spec.signals) signal_district[id] = static_cast<std::uint16_t>(d);
  }
  for (std::uint32_t l = 0; l < lanes.size(); ++l) {
    for (core::LaneIndex next : lanes.lane(l).successors)
      if (m.lane_owner[next] != m.lane_owner[l]) m.lane_borders[l] = 1;
  }
  for (std::size_t s = 0; s < scenario.signals.size(); ++s) {
    if (auto it = signal_district.find(scenario.signals[s].id); it != signal_district.end())
      m.signal_owner[s] = it->second;
  }
  return m;
}

// Watches one district's mirror while a Delta is applied: who leaves across
// a border, who arrives from one, who stands where it should not.
class CityMerger::Listener final : public client::MirrorListener {
 public:
  Listener(CityMerger& m, std::size_t d, std::uint64_t step) : m_(m), d_(d), step_(step) {}
  void on_left(const client::EntityView& view) override {
    const std::uint32_t lane = view.anchor.lane;
    if (lane >= m_.map_.lane_borders.size() || m_.map_.lane_borders[lane] == 0) return;
    if (m_.held_elsewhere(d_, view.id)) return;  // already adopted (coalesced Deltas)
    m_.transit_[view.id.index] = Transit{view, d_, step_};
  }
  void on_entered(const client::EntityView& view) override {
    if (auto it = m_.transit_.find(view.id.index); it != m_.transit_.end()) {
      if (it->second.view.id == view.id && it->second.from != d_) ++m_.counters_.crossings;
      m_.transit_.erase(it);
    }
    const std::uint32_t lane = view.anchor.lane;
    if (lane < m_.map_.lane_owner.size() && m_.map_.lane_owner[lane] != d_)
      ++m_.states_[d_].foreign_entities;
  }

 private:
  CityMerger& m_;
  std::size_t d_;
  std::uint64_t step_;
};

CityMerger::CityMerger(const core::Scenario& scenario, const core::LaneGraph& lanes)
    : lanes_(lanes),
      map_(make_city_map(scenario, lanes)),
      step_us_(scenario.step_us),
      dots_every_steps_(scenario.pedestrians.dots_every_steps),
      mirrors_(std::max<std::size_t>(1, map_.district_ids.size())),
      states_(mirrors_.size()) {
  const std::vector<proto::LanePolyline> lines = polylines(lanes);
  for (client::EntityMirror& m : mirrors_) {
    m.set_strict(true);
    m.set_world(lines, step_us_);
  }
  for (std::uint32_t l = 0; l < lanes.size(); ++l) {
    lane_chain_.push_back(lanes.chain_of(l));
    lane_length_mm_.push_back(proto::to_mm(lanes.lane(l).length_m));
  }
  chain_count_ = lanes.chains().size();
  weights_.prepare(scenario.tiers.importance, {}, {});
}

std::string CityMerger::apply(std::size_t d, const client::Delta& delta) {
  Listener listener(*this, d, delta.step);
  const client::ApplySummary summary = mirrors_[d].apply(delta, &listener);
  DistrictState& st = states_[d];
  if (delta.baseline) st.streaming = true;
  st.step = delta.step;
  st.digest = delta.digest;
  st.entities = static_cast<std::uint32_t>(mirrors_[d].size());
  if (!summary.ok()) ++counters_.mirror_problems;
  return summary.error;
}

void CityMerger::lost(std::size_t d) {
  states_[d].streaming = false;
}

bool CityMerger::held_elsewhere(std::size_t d, client::EntityId id) const {
  for (std::size_t o = 0; o < mirrors_.size(); ++o)
    if (o != d && mirrors_[o].find(id) != nullptr) return true;
  return false;
}

std::optional<std::size_t> CityMerger::district_of(client::EntityId id) const {
  for (std::size_t d = 0; d < mirrors_.size(); ++d)
    if (mirrors_[d].find(id) != nullptr) return d;
  return std::nullopt;
}

bool CityMerger::crossing(client::EntityId id) const {
  const auto it = transit_.find(id.index);
  return it != transit_.end() && it->second.view.id == id;
}

std::uint64_t CityMerger::city_digest() const {
  core::Digest h;
  for (std::size_t d = 0; d < states_.size(); ++d) h.u64(d).u64(states_[d].digest);
  return h.value();
}

void CityMerger::drop_stale_transit(std::uint64_t step) {
  for (auto it = transit_.begin(); it != transit_.end();) {
    if (step >= it->second.left_step + kTransitSteps) {
      ++counters_.transit_dropped;
      it = transit_.erase(it);
    } else {
      ++it;
    }
  }
}

void CityMerger::add_entity(const client::EntityView& view, std::uint64_t step,
                            net::PublishedFrame& f) const {
  const std::uint32_t lane = view.anchor.lane;
  if (lane >= lane_length_mm_.size()) return;  // not this city's (counted by the mirror)
  net::PublishedEntity& e = f.entities.emplace_back();
  e.id = core::EntityId{view.id.index, view.id.generation};
  e.lane = lane;
  // The clients' dead reckoning (server.fbs Delta), so the same millimetre;
  // the position (for interest and hints) as the server computes it.
  e.s_mm = proto::predict_s_mm(view.anchor, step, step_us_, lane_length_mm_[lane]);
  e.speed_mmps = view.anchor.speed_mmps;
  const core::Vec2 at = lanes_.position(lane, static_cast<double>(e.s_mm) / 1000.0);
  e.x_m = at.x_m;
  e.y_m = at.y_m;
  e.z_m = static_cast<float>(lanes_.lane(lane).elevation_m);
  e.kind = static_cast<core::EntityKind>(view.kind);
  // District worlds hold background pedestrians, units and garage vehicles
  // (no residents yet): ranked with Background's class weight.
  e.weight = static_cast<float>(weights_.weight(core::PriorityClass::Background,
                                                e.kind == core::EntityKind::Vehicle, e.x_m, e.y_m));
  e.archetype = view.archetype;
  e.sim_tier = static_cast<std::uint8_t>(view.sim_tier);
  e.policy = static_cast<std::uint8_t>(view.policy);
  e.retiring = view.retiring;
  e.corpse = view.corpse;
  if (!view.label.empty()) {  // a car's VehicleId, as its district named it
    e.label = net::kLabelText | f.label_texts.size();
    f.label_texts.push_back(view.label);
  }
  f.bounds.add(e.x_m, e.y_m);
}

void CityMerger::hold(const client::EntityView& view) {
  const std::uint32_t i = view.id.index;
  if (i >= holder_.size()) holder_.resize(std::size_t{i} + 1, nullptr);
  const client::EntityView*& held = holder_[i];
  if (held == nullptr) {
    held = &view;
    return;
  }
  ++counters_.duplicates;  // invariant 1: the newest anchor wins
  if (view.anchor.step > held->anchor.step) held = &view;
}

void CityMerger::interest_applied(std::size_t d, std::uint64_t version) {
  states_[d].interest_version = version;
}

std::uint64_t CityMerger::interest_version() const {
  std::uint64_t v = UINT64_MAX;
  for (const DistrictState& st : states_) v = std::min(v, st.interest_version);
  return v;
}

std::shared_ptr<const net::PublishedFrame> CityMerger::frame(std::uint64_t step,
                                                             const net::Coverage& coverage) {
  drop_stale_transit(step);
  std::shared_ptr<net::PublishedFrame> f;
  for (auto& p : pool_)
    if (p.use_count() == 1) f = p;
  if (!f) {
    f = std::make_shared<net::PublishedFrame>();
    if (pool_.size() < net::kFramePoolSize) pool_.push_back(f);
  }
  f->step = step;
  f->sim_time_us = step * step_us_;
  f->digest = city_digest();
  f->world_epoch = 0;
  f->entities_built = true;
  f->coverage = coverage;
  f->entities.clear();
  f->label_texts.clear();
  f->bounds = net::Bounds{};
  f->awaiting_representation.clear();
  f->observers.clear();
  f->observer_views.clear();
  // Who holds each id index, then the entities in index order: a walk over
  // the indices instead of a sort of the entities.
  std::fill(holder_.begin(), holder_.end(), nullptr);
  std::size_t held = 0;
  for (const client::EntityMirror& m : mirrors_) {
    m.for_each([&](const client::EntityView& v) { hold(v); });
    held += m.size();
  }
  for (const auto& [index, t] : transit_) hold(t.view);
  f->entities.reserve(held + transit_.size());
  for (const client::EntityView* v : holder_)
    if (v != nullptr) add_entity(*v, step, *f);
  f->signal_phases.assign(map_.signal_owner.size(), 0);
  for (std::size_t s = 0; s < map_.signal_owner.size(); ++s) {
    const auto& phases = mirrors_[map_.signal_owner[s]].signal_phases();
    if (s < phases.size()) f->signal_phases[s] = static_cast<std::uint8_t>(phases[s]);
  }
  f->dot_step = dots_every_steps_ > 0 && step % dots_every_steps_ == 0;
  // Per chain: the pedestrians here, plus those the districts counted as
  // dots because the gateway's interest does not reach them. As a server's
  // frame: on dot steps and in frames that are not whole; otherwise empty
  // (a session counts a whole frame's dots by a walk when it needs them).
  f->chain_pedestrians.clear();
  if (!f->dot_step && coverage.whole) return f;
  f->chain_pedestrians.assign(chain_count_, 0);
  for (const client::EntityMirror& m : mirrors_) {
    const std::vector<std::uint16_t>& dots = m.chain_dots();
    for (std::size_t c = 0; m.has_dots() && c < dots.size() && c < chain_count_; ++c)
      f->chain_pedestrians[c] += dots[c];
  }
  for (const net::PublishedEntity& e : f->entities) {
    if (e.kind == core::EntityKind::Pedestrian && e.lane < lane_chain_.size() &&
        lane_chain_[e.lane] < chain_count_)
      ++f->chain_pedestrians[lane_chain_[e.lane]];
  }
  return f;
}

}  // namespace bustle::gateway
