// One client's stream: interest through the spatial index, hints within
// budgets, the diff against what it was sent, and its leases
// (stream_tracker.hpp).
#include "bustle/net/stream_tracker.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>

#include "bustle/core/scenario.hpp"

namespace bustle::net {
namespace {

constexpr std::uint8_t kActor = static_cast<std::uint8_t>(wire::RepresentationHint::Actor);
constexpr std::uint8_t kInstanced = static_cast<std::uint8_t>(wire::RepresentationHint::Instanced);
constexpr std::uint8_t kMarker = static_cast<std::uint8_t>(wire::RepresentationHint::Marker);
constexpr std::uint8_t kNone = static_cast<std::uint8_t>(wire::RepresentationHint::None);
constexpr std::uint8_t kFull = static_cast<std::uint8_t>(core::SimTier::Full);
constexpr std::uint8_t kSimulated = static_cast<std::uint8_t>(core::SimTier::Simulated);

core::Status at(const std::string& field, const std::string& what) {
  return core::Status::invalid_argument(field + ": " + what);
}

core::Status read_observers(const flatbuffers::Vector<flatbuffers::Offset<wire::Observer>>* list,
                            std::vector<ClientObserver>& out) {
  out.clear();
  if (list == nullptr) return {};
  if (list->size() > kObserversPerClientMax) {
    return at("observers", std::to_string(list->size()) + " entries exceed the limit of " +
                               std::to_string(kObserversPerClientMax) + " per client");
  }
  for (flatbuffers::uoffset_t k = 0; k < list->size(); ++k) {
    const wire::Observer* o = list->Get(k);
    const std::string field = "observers[" + std::to_string(k) + "]";
    if (o == nullptr) return at(field, "missing");
    const double values[4] = {o->x_m(), o->y_m(), o->z_m(), o->heading_rad()};
    const char* names[4] = {".x_m", ".y_m", ".z_m", ".heading_rad"};
    for (int f = 0; f < 4; ++f) {
      if (!std::isfinite(values[f])) return at(field + names[f], "must be a finite number");
    }
    if (!(o->radius_m() > 0.0) || !(o->radius_m() <= kObserverRadiusMaxM)) {
      return at(field + ".radius_m", "must be in (0, " +
                                         std::to_string(static_cast<int>(kObserverRadiusMaxM)) +
                                         "] metres, got " + std::to_string(o->radius_m()));
    }
    out.push_back(
        {o->x_m(), o->y_m(), o->z_m(), o->has_heading(), o->heading_rad(), o->radius_m()});
  }
  return {};
}

core::Status read_budgets(const wire::RepresentationBudgets* b, RepresentationBudgets& out,
                          const RepresentationBudgets& defaults = {}) {
  out = defaults;
  if (b == nullptr) return {};
  const auto check = [](const char* field, std::uint32_t v, std::uint32_t max) -> core::Status {
    if (v <= max) return {};
    return at(std::string("budgets.") + field,
              std::to_string(v) + " exceeds the limit of " + std::to_string(max));
  };
  if (core::Status s = check("actors", b->actors(), kActorBudgetMax); !s.ok()) return s;
  if (core::Status s = check("instances", b->instances(), kInstanceBudgetMax); !s.ok()) return s;
  if (core::Status s = check("markers", b->markers(), kMarkerBudgetMax); !s.ok()) return s;
  out = {b->actors(), b->instances(), b->markers()};
  return {};
}

// The distance / radius ratio where only "above 1" matters (select()'s
// hysteresis check, over the smallest of an entity's ratios; rank() measures
// its own distances): 0 or 2 when the squares decide it with a margin far
// above their rounding, the exact std::hypot ratio within 1e-9 of the
// boundary, so "above 1" is exactly hypot's answer. hypot is a library call,
// and every candidate of every client needed one.
double inside_ratio(double dx, double dy, double radius_m) {
  const double d2 = dx * dx + dy * dy;
  const double r2 = radius_m * radius_m;
  if (d2 < r2 * (1.0 - 1e-9)) return 0.0;
  if (d2 > r2 * (1.0 + 1e-9)) return 2.0;
  return std::hypot(dx, dy) / radius_m;
}

bool better(std::uint8_t hint, std::uint8_t than) {
  return hint < than;
}  // Actor < Instanced < Marker < None

}  // namespace

CoverageNeed coverage_need(const ClientInterest& interest) {
  CoverageNeed need;
  need.whole = interest.observers.empty();
  for (const ClientObserver& o : interest.observers)  // select()'s radius, to the bit
    need.discs.push_back({o.x_m, o.y_m, o.radius_m * kInterestExitFactor});
  return need;
}

core::Status read_subscribe(const wire::Subscribe& sub, ClientInterest& out,
                            const RepresentationBudgets& default_budgets) {
  ClientInterest in;
  if (sub.kinds() != nullptr && sub.kinds()->size() > 0) {
    in.kind_mask = 0;
    for (flatbuffers::uoffset_t k = 0; k < sub.kinds()->size(); ++k) {
      const auto kind = static_cast<std::uint32_t>(sub.kinds()->Get(k));
      if (kind > static_cast<std::uint32_t>(wire::EntityKind::MAX)) {
        return at("kinds[" + std::to_string(k) + "]",
                  "unknown entity kind " + std::to_string(kind));
      }
      in.kind_mask |= 1u << kind;
    }
  }
  if (core::Status s = read_observers(sub.observers(), in.observers); !s.ok()) return s;
  if (core::Status s = read_budgets(sub.budgets(), in.budgets, default_budgets); !s.ok()) return s;
  if (sub.motion_tolerance_mm() > kMotionToleranceMmMax) {
    return at("motion_tolerance_mm", std::to_string(sub.motion_tolerance_mm()) +
                                         " exceeds the limit of " +
                                         std::to_string(kMotionToleranceMmMax));
  }
  in.motion_tolerance_mm = sub.motion_tolerance_mm();
  out = std::move(in);
  return {};
}

core::Status read_update_interest(const wire::UpdateInterest& upd, ClientInterest& out) {
  // An absent field keeps its value; an empty observers list means the
  // whole city.
  ClientInterest in = out;
  if (upd.observers() != nullptr) {
    if (core::Status s = read_observers(upd.observers(), in.observers); !s.ok()) return s;
  }
  if (upd.budgets() != nullptr) {
    if (core::Status s = read_budgets(upd.budgets(), in.budgets); !s.ok()) return s;
  }
  out = std::move(in);
  return {};
}

std::string StreamContext::label(std::uint64_t ref) const {
  const std::uint64_t kind = ref & (0xffull << 56);
  if (kind == kLabelVehicle) {
    const auto garage = static_cast<std::size_t>((ref >> 40) & 0xffff);
    const std::uint64_t ordinal = ref & ((1ull << 40) - 1);
    // The garage's VehicleId format, as VehicleSystem::vehicle_id() names it.
    if (garage < garage_ids.size() && garage < vehicle_id_formats.size())
      return core::format_vehicle_id(vehicle_id_formats[garage], garage_ids[garage], scenario_id,
                                     ordinal);
    char digits[24];
    std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(ordinal));
    return "vehicle." + (garage < garage_ids.size() ? garage_ids[garage] : std::string("?")) + "." +
           digits;
  }
  if (kind == kLabelResident) {
    const auto r = static_cast<std::uint32_t>(ref & 0xffffffffu);
    const auto it =
        std::upper_bound(community_first_resident.begin(), community_first_resident.end(), r);
    if (it == community_first_resident.begin()) return {};
    const auto c = static_cast<std::size_t>(it - community_first_resident.begin() - 1);
    char digits[16];
    std::snprintf(digits, sizeof digits, "%03u", r - community_first_resident[c]);
    return (c < community_ids.size() ? community_ids[c] : std::string("?")) + "." + digits;
  }
  return {};
}

void SpatialIndex::build(const PublishedFrame& frame, double cell_m) {
  frame_ = &frame;
  cell_m_ = cell_m;
  cols_ = rows_ = 0;
  cell_start_.clear();
  by_cell_.clear();
  if (frame.entities.empty()) return;
  // The frame's bounds: gathered as its entities were built.
  min_x_ = frame.bounds.min_x_m;
  min_y_ = frame.bounds.min_y_m;
  const double max_x = frame.bounds.max_x_m, max_y = frame.bounds.max_y_m;
  // At most ~1M cells whatever the extent: grow the cell for huge worlds.
  while ((max_x - min_x_) / cell_m_ * (max_y - min_y_) / cell_m_ > double{1 << 20}) cell_m_ *= 2.0;
  cols_ = static_cast<std::int64_t>((max_x - min_x_) / cell_m_) + 1;
  rows_ = static_cast<std::int64_t>((max_y - min_y_) / cell_m_) + 1;
  const auto cells = static_cast<std::size_t>(cols_ * rows_);
  cell_start_.assign(cells + 1, 0);
  // Kept between builds, like by_cell_: a steady city allocates nothing here.
  cell_of_.resize(frame.entities.size());
  for (std::size_t k = 0; k < frame.entities.size(); ++k) {
    const PublishedEntity& e = frame.entities[k];
    const auto c = static_cast<std::int64_t>((e.x_m - min_x_) / cell_m_);
    const auto r = static_cast<std::int64_t>((e.y_m - min_y_) / cell_m_);
    cell_of_[k] = static_cast<std::uint32_t>(r * cols_ + c);
    ++cell_start_[cell_of_[k] + 1];
  }
  for (std::size_t c = 0; c < cells; ++c) cell_start_[c + 1] += cell_start_[c];
  by_cell_.resize(frame.entities.size());
  fill_.assign(cell_start_.begin(), cell_start_.end() - 1);
  for (std::size_t k = 0; k < frame.entities.size(); ++k)
    by_cell_[fill_[cell_of_[k]]++] = static_cast<std::uint32_t>(k);
}

void StreamTracker::set_interest(const ClientInterest& interest, bool baseline) {
  interest_ = interest;
  if (baseline) reset();
}

void StreamTracker::reset() {
  baseline_pending_ = true;
  sent_.clear();
  leases_kept_ = LeaseSummary{};
}

void StreamTracker::set_lease_grace_steps(std::uint32_t grace_steps) {
  lease_grace_steps_ = grace_steps;
  leases_kept_ = LeaseSummary{};
  for (const Sent& s : sent_) count_lease(s, 1);
}

StreamTracker::Candidate StreamTracker::candidate(const PublishedEntity& e, std::uint32_t pos,
                                                  double ratio) const {
  Candidate c;
  c.id = e.id;
  c.pos = pos;
  c.sim_tier = e.sim_tier;
  c.retiring = e.retiring;
  c.key = ratio;
  c.distance = field_.effective_distance_m(e.x_m, e.y_m, e.z_m, e.weight);
  if (!std::isfinite(c.distance)) c.distance = std::numeric_limits<double>::max();
  return c;
}

void StreamTracker::prepare_field(const PublishedFrame& frame, const StreamContext& ctx) {
  obs_points_.clear();
  obs_views_.clear();
  if (interest_.observers.empty()) {
    obs_points_ = frame.observers;
    obs_views_ = frame.observer_views;
  } else {
    for (const ClientObserver& o : interest_.observers) {
      obs_points_.push_back({o.x_m, o.y_m});
      obs_views_.push_back({o.z_m, o.has_heading, o.heading_rad});
    }
  }
  field_.prepare(ctx.importance, obs_points_, obs_views_);
}

// Step 1 (after prepare_field): the candidates, sorted by frame position
// (= entity index), each with its effective distance and the hint it was
// last sent (None when not received).
void StreamTracker::select(const PublishedFrame& frame, const SpatialIndex* index) {
  cand_.clear();
  const auto wanted = [&](const PublishedEntity& e) {
    return (interest_.kind_mask >> static_cast<std::uint32_t>(e.kind)) & 1u;
  };
  if (interest_.observers.empty()) {
    for (std::uint32_t k = 0; k < frame.entities.size(); ++k) {
      if (wanted(frame.entities[k])) cand_.push_back(candidate(frame.entities[k], k, 0.0));
    }
  } else {
    assert(index != nullptr && index->frame() == &frame);
    // With one observer the index yields each entity at most once: no
    // de-duplication (the stamps are a random access per entity into arrays
    // as long as the frame).
    const bool dedupe = interest_.observers.size() > 1;
    if (dedupe && stamp_.size() < frame.entities.size()) {
      stamp_.resize(frame.entities.size(), 0);
      slot_.resize(frame.entities.size(), 0);
    }
    if (dedupe && ++stamp_value_ == 0) {
      std::fill(stamp_.begin(), stamp_.end(), 0);
      stamp_value_ = 1;
    }
    // Inside the exit radius of some observer; `key` holds the smallest
    // inside_ratio for the hysteresis check below.
    for (const ClientObserver& o : interest_.observers) {
      index->for_each_within(o.x_m, o.y_m, o.radius_m * kInterestExitFactor, [&](std::uint32_t k) {
        const PublishedEntity& e = frame.entities[k];
        if (!wanted(e)) return;
        const double ratio = inside_ratio(e.x_m - o.x_m, e.y_m - o.y_m, o.radius_m);
        if (!dedupe || stamp_[k] != stamp_value_) {
          if (dedupe) {
            stamp_[k] = stamp_value_;
            slot_[k] = static_cast<std::uint32_t>(cand_.size());
          }
          cand_.push_back(candidate(e, k, ratio));
        } else {
          Candidate& c = cand_[slot_[k]];  // seen by an earlier observer
          c.key = std::min(c.key, ratio);
        }
      });
    }
    sort_by_pos(cand_, scratch_);
  }
  // Merge with what was sent: the current hint, and the interest hysteresis
  // (an entity not yet received enters only inside the radius proper).
  // A kept candidate moves down whole and only then takes its hint: a copy
  // given the byte first and then stored whole stalled on that byte.
  std::size_t s = 0;
  std::size_t out = 0;
  const bool hysteresis = !interest_.observers.empty();
  for (std::size_t k = 0; k < cand_.size(); ++k) {
    const Candidate& c = cand_[k];
    while (s < sent_.size() && sent_[s].id.index < c.id.index) ++s;
    const bool received = s < sent_.size() && sent_[s].id == c.id;
    if (hysteresis && !received && c.key > 1.0) continue;
    if (out != k) cand_[out] = c;
    cand_[out++].current = received ? sent_[s].hint : kNone;
  }
  cand_.resize(out);
}

// Step 2: hints within the budgets, nearest first, holding hints.
void StreamTracker::rank(const StreamContext& ctx) {
  // select() made every candidate anew, its hint None.
  // One pass per level: the `budget` lowest keys among the eligible still
  // unassigned candidates take `level`. Holding this level or a better one
  // scales the key by kHintKeepFactor. Ties break by entity index.
  // A fading (retiring) entity never improves its hint: it keeps what it has
  // or drops, so a client does not swap representations during a fade. A
  // baseline is the exception: it lists what the client receives, fading
  // entities included (server.fbs), so a late joiner or a client after a
  // Restore mirrors what a client that saw the fade begin does.
  const auto assign = [&](std::uint8_t level, std::uint32_t budget, auto eligible) {
    pool_.clear();
    for (std::uint32_t k = 0; k < cand_.size(); ++k) {
      Candidate& c = cand_[k];
      if (c.hint != kNone || !eligible(c)) continue;
      if (c.retiring && !baseline_pending_ && better(level, c.current)) continue;
      c.key = c.distance * (c.current <= level ? kHintKeepFactor : 1.0);
      pool_.push_back(k);
    }
    const auto by_key = [&](std::uint32_t a, std::uint32_t b) {
      if (cand_[a].key != cand_[b].key) return cand_[a].key < cand_[b].key;
      return cand_[a].pos < cand_[b].pos;
    };
    if (pool_.size() > budget) {
      std::nth_element(pool_.begin(), pool_.begin() + budget, pool_.end(), by_key);
      pool_.resize(budget);
    }
    for (const std::uint32_t k : pool_) cand_[k].hint = level;
  };
  assign(kActor, interest_.budgets.actors,
         [](const Candidate& c) { return c.sim_tier == kFull || c.retiring; });
  assign(kInstanced, interest_.budgets.instances, [](const Candidate& c) {
    return c.sim_tier == kFull || c.sim_tier == kSimulated || c.retiring;
  });
  assign(kMarker, interest_.budgets.markers, [](const Candidate&) { return true; });
  // Entries per step: a new entity costs the client an actor or instance, so
  // at most entries_per_step_max enter per step, nearest first; the others
  // wait (they stay None for now). A baseline sends everything at once.
  truncated_ = 0;
  for (const Candidate& c : cand_) truncated_ += c.hint == kNone;
  if (baseline_pending_) return;
  pool_.clear();
  for (std::uint32_t k = 0; k < cand_.size(); ++k) {
    if (cand_[k].current == kNone && cand_[k].hint != kNone) pool_.push_back(k);
  }
  if (pool_.size() <= ctx.entries_per_step_max) return;
  const auto by_distance = [&](std::uint32_t a, std::uint32_t b) {
    if (cand_[a].distance != cand_[b].distance) return cand_[a].distance < cand_[b].distance;
    return cand_[a].pos < cand_[b].pos;
  };
  std::nth_element(pool_.begin(), pool_.begin() + ctx.entries_per_step_max, pool_.end(),
                   by_distance);
  for (std::size_t k = ctx.entries_per_step_max; k < pool_.size(); ++k) {
    cand_[pool_[k]].hint = kNone;
    ++truncated_;
  }
}

void StreamTracker::update_received(const Sent& prev, const PublishedEntity& cur, std::uint8_t hint,
                                    std::uint64_t step, const StreamContext& ctx, Sent& next) {
  // The lease carries over; a new hint restarts the wait for it.
  next.applied = prev.applied;
  next.unassigned_reason = prev.unassigned_reason;
  next.waiting_since = prev.hint == hint ? prev.waiting_since : step;
  // Motion: a record only when the client's prediction leaves the
  // tolerance, or the lane or speed changed.
  const std::uint32_t length_mm = ctx.lane_length_mm[prev.anchor.lane];
  const std::uint32_t predicted = proto::predict_s_mm(prev.anchor, step, ctx.step_us, length_mm);
  const std::uint32_t error_mm = predicted > cur.s_mm ? predicted - cur.s_mm : cur.s_mm - predicted;
  if (prev.anchor.lane != cur.lane || prev.anchor.speed_mmps != cur.speed_mmps ||
      error_mm > interest_.motion_tolerance_mm) {
    motion_.add({cur.id.index, prev.anchor.lane != cur.lane, cur.lane, cur.s_mm, cur.speed_mmps});
  } else {
    next.anchor = prev.anchor;
  }
  const auto change = [&](wire::EntityField field, std::uint8_t before, std::uint8_t after) {
    if (before != after) changes_.emplace_back(cur.id.index, field, after);
  };
  change(wire::EntityField::SimTier, prev.sim_tier, cur.sim_tier);
  change(wire::EntityField::Representation, prev.hint, hint);
  change(wire::EntityField::Policy, prev.policy, cur.policy);
  if (cur.corpse && !prev.corpse) changes_.emplace_back(cur.id.index, wire::EntityField::Corpse, 1);
  next.corpse = prev.corpse || cur.corpse;  // once a corpse, always one
  if (cur.retiring && !prev.retiring) retiring_.emplace_back(cur.id.index, cur.id.generation);
}

// Step 3: merge-walk the received set against what was sent.
void StreamTracker::diff_against_sent(const PublishedFrame& frame, const StreamContext& ctx,
                                      Counts& counts) {
  entered_.clear();
  label_index_.clear();
  label_ref_.clear();
  motion_.clear();
  changes_.clear();
  left_.clear();
  retiring_.clear();
  next_sent_.clear();
  leases_kept_ = LeaseSummary{};  // counted again as the entities are sent
  lease_step_ = frame.step;
  std::size_t a = 0;  // cursor in sent_
  const auto leave = [&](const Sent& s) { left_.emplace_back(s.id.index, s.id.generation); };
  for (const Candidate& c : cand_) {
    if (c.hint == kNone) continue;
    const PublishedEntity& cur = frame.entities[c.pos];
    while (a < sent_.size() && sent_[a].id.index < cur.id.index) leave(sent_[a++]);
    Sent next{cur.id,       {cur.lane, cur.s_mm, cur.speed_mmps, frame.step},
              c.hint,       cur.sim_tier,
              cur.policy,   cur.retiring,
              cur.corpse,   cur.kind == core::EntityKind::Pedestrian,
              kNotReported, 0,
              frame.step};
    bool enter = true;
    if (a < sent_.size() && sent_[a].id.index == cur.id.index) {
      const Sent& prev = sent_[a++];
      if (prev.id.generation == cur.id.generation && !(prev.retiring && !cur.retiring)) {
        enter = false;
        update_received(prev, cur, c.hint, frame.step, ctx, next);
      } else {
        // Slot reused by a new identity, or a retiring entity that came back
        // (dormant and active again, unseen by this client): the old one
        // left, the new one entered.
        leave(prev);
      }
    }
    if (enter) {
      entered_.emplace_back(wire::EntityId(cur.id.index, cur.id.generation), cur.lane, cur.s_mm,
                            cur.speed_mmps, cur.archetype, static_cast<wire::EntityKind>(cur.kind),
                            static_cast<wire::SimTier>(cur.sim_tier),
                            static_cast<wire::RepresentationHint>(c.hint),
                            static_cast<wire::ControlPolicy>(cur.policy), cur.corpse);
      if (cur.label != 0) {
        label_index_.push_back(cur.id.index);
        label_ref_.push_back(cur.label);
      }
      if (cur.retiring) retiring_.emplace_back(cur.id.index, cur.id.generation);
    }
    ++counts.per_hint[c.hint];
    count_lease(next, 1);
    next_sent_.push_back(next);
  }
  for (; a < sent_.size(); ++a) leave(sent_[a]);
  sent_.swap(next_sent_);
}

// Signals: every phase in a baseline, then only those that changed since
// what this client last received.
flatbuffers::Offset<flatbuffers::Vector<const wire::SignalPhaseState*>>
StreamTracker::encode_signals(const PublishedFrame& frame, flatbuffers::FlatBufferBuilder& fbb) {
  signals_.clear();
  if (baseline_pending_ || signals_sent_.size() != frame.signal_phases.size()) {
    signals_sent_.assign(frame.signal_phases.size(), 0xff);
  }
  for (std::size_t i = 0; i < frame.signal_phases.size(); ++i) {
    if (signals_sent_[i] == frame.signal_phases[i]) continue;
    signals_sent_[i] = frame.signal_phases[i];
    signals_.emplace_back(static_cast<std::uint16_t>(i),
                          static_cast<wire::SignalPhase>(frame.signal_phases[i]));
  }
  return signals_.empty() ? 0 : fbb.CreateVectorOfStructs(signals_);
}

// Pedestrians this client does not receive with identity, per chain: a
// person is either an entity or a dot for a client, never both.
flatbuffers::Offset<flatbuffers::Vector<const wire::ChainDots*>> StreamTracker::encode_dots(
    const PublishedFrame& frame, const StreamContext& ctx, flatbuffers::FlatBufferBuilder& fbb) {
  if (frame.chain_pedestrians.size() == ctx.chain_count) {
    // Every received entity is one of this frame's, on the lane of its
    // anchor (a lane change always sends a motion record): the frame's
    // pedestrians per chain minus the received ones.
    dot_counts_ = frame.chain_pedestrians;
    for (const Sent& s : sent_) {
      if (s.pedestrian && s.anchor.lane < ctx.lane_chain.size()) {
        const std::uint32_t chain = ctx.lane_chain[s.anchor.lane];
        if (chain < dot_counts_.size()) --dot_counts_[chain];
      }
    }
  } else {
    walk_dots(frame, ctx);
  }
  dots_.clear();
  for (std::size_t c = 0; c < dot_counts_.size(); ++c) {
    dots_.emplace_back(static_cast<std::uint32_t>(c),
                       static_cast<std::uint16_t>(std::min(dot_counts_[c], 65535u)));
  }
  return fbb.CreateVectorOfStructs(dots_);
}

// The dots by a walk over the frame: for a frame without per-chain totals.
void StreamTracker::walk_dots(const PublishedFrame& frame, const StreamContext& ctx) {
  dot_counts_.assign(ctx.chain_count, 0);
  std::size_t r = 0;
  for (const PublishedEntity& e : frame.entities) {
    while (r < sent_.size() && sent_[r].id.index < e.id.index) ++r;
    const bool received = r < sent_.size() && sent_[r].id == e.id;
    if (received || e.kind != core::EntityKind::Pedestrian || e.lane >= ctx.lane_chain.size())
      continue;
    const std::uint32_t chain = ctx.lane_chain[e.lane];
    if (chain < dot_counts_.size()) ++dot_counts_[chain];
  }
}

StreamTracker::Counts StreamTracker::encode(const PublishedFrame& frame, const SpatialIndex* index,
                                            const StreamContext& ctx,
                                            flatbuffers::FlatBufferBuilder& fbb, bool send_dots) {
  prepare_field(frame, ctx);
  select(frame, index);
  rank(ctx);
  Counts counts;
  diff_against_sent(frame, ctx, counts);

  fbb.Clear();
  labels_.clear();
  for (std::size_t k = 0; k < label_index_.size(); ++k) {
    const std::uint64_t ref = label_ref_[k];
    const std::uint64_t text = ref & ((1ull << 56) - 1);
    const auto name = (ref & (0xffull << 56)) != kLabelText ? fbb.CreateString(ctx.label(ref))
                      : text < frame.label_texts.size() ? fbb.CreateString(frame.label_texts[text])
                                                        : fbb.CreateString("");
    labels_.push_back(wire::CreateEntityLabel(fbb, label_index_[k], name));
  }
  const auto labels = labels_.empty() ? 0 : fbb.CreateVector(labels_);
  // Empty vectors are left out (absent reads as empty): a quiet step costs
  // only the header.
  const auto entered = entered_.empty() ? 0 : fbb.CreateVectorOfStructs(entered_);
  const auto motion = motion_.bytes().empty() ? 0 : fbb.CreateVector(motion_.bytes());
  const auto changes = changes_.empty() ? 0 : fbb.CreateVectorOfStructs(changes_);
  const auto left = left_.empty() ? 0 : fbb.CreateVectorOfStructs(left_);
  const auto signals = encode_signals(frame, fbb);
  const auto dots = send_dots ? encode_dots(frame, ctx, fbb)
                              : flatbuffers::Offset<flatbuffers::Vector<const wire::ChainDots*>>(0);
  const auto retiring = retiring_.empty() ? 0 : fbb.CreateVectorOfStructs(retiring_);
  const auto delta = wire::CreateDelta(fbb, frame.step, frame.sim_time_us, frame.digest,
                                       baseline_pending_, entered, labels, motion, changes, left,
                                       signals, dots, retiring, truncated_);
  fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::Delta, delta.Union()),
             wire::ServerFrameIdentifier());
  baseline_pending_ = false;
  counts.entered = static_cast<std::uint32_t>(entered_.size());
  counts.motion = static_cast<std::uint32_t>(motion_.count());
  counts.changes = static_cast<std::uint32_t>(changes_.size());
  counts.left = static_cast<std::uint32_t>(left_.size());
  counts.retiring = static_cast<std::uint32_t>(retiring_.size());
  counts.received = static_cast<std::uint32_t>(sent_.size());
  counts.truncated = truncated_;
  return counts;
}

void StreamTracker::apply_leases(const flatbuffers::Vector<const wire::LeaseEntry*>& entries,
                                 std::uint64_t step, std::vector<core::EntityId>* held) {
  ++lease_reports_;
  for (const wire::LeaseEntry* e : entries) {
    ++lease_entries_;
    const auto it =
        std::lower_bound(sent_.begin(), sent_.end(), e->id().index(),
                         [](const Sent& s, std::uint32_t index) { return s.id.index < index; });
    if (it == sent_.end() || it->id.index != e->id().index() ||
        it->id.generation != e->id().generation()) {
      ++lease_unknown_;
      continue;
    }
    const bool was_applied = it->applied == it->hint;
    count_lease(*it, -1);  // counted again below, as the report leaves it
    if (static_cast<std::size_t>(e->state()) < 4)
      ++lease_by_state_[static_cast<std::size_t>(e->state())];
    switch (e->state()) {
      case wire::LeaseState::Assigned:
      case wire::LeaseState::Preserved:
        it->applied = std::min<std::uint8_t>(e->representation(), kNone);
        it->unassigned_reason = 0;
        break;
      case wire::LeaseState::Released:
        it->applied = kNone;
        it->unassigned_reason = 0;
        break;
      case wire::LeaseState::Unassigned:
        it->applied = kNone;
        it->unassigned_reason =
            static_cast<std::uint8_t>(e->reason()) < 5 ? static_cast<std::uint8_t>(e->reason()) : 4;
        break;
    }
    if (was_applied && it->applied != it->hint) it->waiting_since = step;  // the wait starts now
    count_lease(*it, 1);
    const bool holds =
        e->state() == wire::LeaseState::Assigned || e->state() == wire::LeaseState::Preserved;
    if (held != nullptr && holds && it->applied < kNone) held->push_back(it->id);
  }
}

void StreamTracker::count_sent_lease(LeaseSummary& sum, const Sent& s, std::uint64_t step,
                                     std::uint32_t grace_steps, std::uint32_t d) {
  if (s.hint < kNone) sum.requested[s.hint] += d;
  if (s.applied < kNone) sum.applied[s.applied] += d;
  if (s.applied == s.hint) return;
  sum.waiting += d;
  if (step > s.waiting_since + grace_steps) {
    sum.waiting_past_grace += d;
    sum.past_grace_by_reason[s.applied == kNotReported ? 0 : s.unassigned_reason] += d;
  }
}

void StreamTracker::count_lease(const Sent& s, int sign) {
  // Unsigned wrap-around: a -1 undoes exactly the +1 counted before.
  count_sent_lease(leases_kept_, s, lease_step_, lease_grace_steps_,
                   static_cast<std::uint32_t>(sign));
}

StreamTracker::LeaseSummary StreamTracker::lease_summary(std::uint64_t step,
                                                         std::uint32_t grace_steps) const {
  if (step != lease_step_ || grace_steps != lease_grace_steps_)
    return recount_lease_summary(step, grace_steps);
  LeaseSummary sum = leases_kept_;
  sum.reports = lease_reports_;
  sum.entries = lease_entries_;
  sum.unknown_entries = lease_unknown_;
  std::copy(std::begin(lease_by_state_), std::end(lease_by_state_),
            std::begin(sum.entries_by_state));
  return sum;
}

StreamTracker::LeaseSummary StreamTracker::recount_lease_summary(std::uint64_t step,
                                                                 std::uint32_t grace_steps) const {
  LeaseSummary sum;
  sum.reports = lease_reports_;
  sum.entries = lease_entries_;
  sum.unknown_entries = lease_unknown_;
  std::copy(std::begin(lease_by_state_), std::end(lease_by_state_),
            std::begin(sum.entries_by_state));
  for (const Sent& s : sent_) count_sent_lease(sum, s, step, grace_steps, 1);
  return sum;
}

}  // namespace bustle::net
