// The representation layer's frame: mirror, pose tracks and clock brought
// up to date, each entity routed to its backend, falling back to a coarser
// one when refused (representation.hpp).
#include "bustle/client/representation.hpp"

#include <algorithm>
#include <cassert>
#include <string>

namespace bustle::client {

// Invariants (asserted where written and where read):
//   1. drawn != pending unless both are null.
//   2. A slot is in pending_ at most once, and exactly while its pending
//      backend is set.
//   3. A slot is in lease_queue_ at most once (lease_queued).
struct RepresentationLayer::SlotRecord {
  bool live = false;
  EntityId id;
  RepresentationHint hint = RepresentationHint::None;
  RenderBackend* drawn = nullptr;
  RenderBackend* pending = nullptr;
  // Levels (hint_index) whose backend refused this entity: skipped by the
  // fallback until the hint changes or a backend is installed.
  std::uint8_t refused_levels = 0;
  UnassignedReason pending_reason = UnassignedReason::None;
  bool in_pending_list = false;
  bool lease_queued = false;
  Lease lease;  // last computed
  bool lease_known = false;
  RepresentationHint told = RepresentationHint::None;  // drawn_as as last told to the observer
  PoseTrack track;
};

class RepresentationLayer::Listener final : public MirrorListener {
 public:
  explicit Listener(RepresentationLayer& layer) : layer_(layer) {}
  void on_reset() override {
    for (std::uint32_t s = 0; s < layer_.slots_.size(); ++s) {
      if (layer_.slots_[s].live) layer_.release(s);
    }
  }
  void on_entered(const EntityView& view) override {
    layer_.ensure_slot(view.slot.value);
    SlotRecord& r = layer_.slots_[view.slot.value];
    if (r.live) layer_.release(view.slot.value);  // reuse: never start from old history
    r.live = true;
    r.id = view.id;
    r.hint = view.representation;
    r.track.reset();
    entered_.push_back(view.slot.value);
    if (view.corpse) layer_.corpses_learned_.push_back(view.id);
  }
  void on_changed(const EntityView& view, EntityField field) override {
    if (field == EntityField::Corpse) layer_.corpses_learned_.push_back(view.id);
    if (field != EntityField::Representation) return;
    SlotRecord& r = layer_.slots_[view.slot.value];
    assert(r.live);
    r.hint = view.representation;
    changed_.push_back(view.slot.value);
  }
  // A duplicate enter rewrites the state, the hint included.
  void on_moved(const EntityView& view) override {
    SlotRecord& r = layer_.slots_[view.slot.value];
    if (r.live && r.hint != view.representation) {
      r.hint = view.representation;
      changed_.push_back(view.slot.value);
    }
  }
  void on_left(const EntityView& view) override { layer_.release(view.slot.value); }

  std::vector<std::uint32_t> entered_;
  std::vector<std::uint32_t> changed_;

 private:
  RepresentationLayer& layer_;
};

RepresentationLayer::RepresentationLayer(RepresentationConfig config, LogSink* log)
    : config_(std::move(config)),
      log_(log),
      mirror_(config_.max_entities),
      clock_(config_.clock),
      listener_(std::make_unique<Listener>(*this)) {
  assert(config_.activation_retries_per_frame >= 1);
}

RepresentationLayer::~RepresentationLayer() {
  for (std::uint32_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].live) release(s);
  }
  for (RepresentationHint h :
       {RepresentationHint::Actor, RepresentationHint::Instanced, RepresentationHint::Marker}) {
    set_backend(h, nullptr);
  }
}

void RepresentationLayer::set_world(const WelcomeInfo& welcome) {
  mirror_.set_world(welcome);
  step_us_ = welcome.step_us;
}

std::int64_t RepresentationLayer::render_delay_us() const {
  // One step behind, every Delta that arrives a little late is extrapolated;
  // half a step more keeps the render time between two samples.
  return std::max(config_.interpolation.interpolation_delay_us, step_us_ * 3 / 2);
}

std::size_t RepresentationLayer::hint_index(RepresentationHint hint) {
  assert(hint != RepresentationHint::None);
  return static_cast<std::size_t>(hint);
}

RenderBackend* RepresentationLayer::route(RepresentationHint hint) const {
  return hint == RepresentationHint::None ? nullptr : backends_[hint_index(hint)];
}

RepresentationHint RepresentationLayer::hint_of(const RenderBackend* backend) const {
  for (RepresentationHint h :
       {RepresentationHint::Actor, RepresentationHint::Instanced, RepresentationHint::Marker}) {
    if (backend != nullptr && backends_[hint_index(h)] == backend) return h;
  }
  return RepresentationHint::None;
}

RenderBackend* RepresentationLayer::backend(RepresentationHint hint) const {
  return route(hint);
}

InstallStatus RepresentationLayer::set_backend(RepresentationHint hint, RenderBackend* backend) {
  if (hint == RepresentationHint::None) {
    // None means "not drawn": there is nothing to install for it.
    ++counters_.refused_installs;
    log_to(log_, LogLevel::Error, "representation", "set_backend: hint None cannot have a backend");
    return InstallStatus::Refused;
  }
  RenderBackend* old = backends_[hint_index(hint)];
  if (old == backend) return InstallStatus::Installed;
  const bool already_installed = backend != nullptr && hint_of(backend) != RepresentationHint::None;
  if (backend != nullptr && !already_installed && !backend->initialize(log_)) {
    ++counters_.refused_installs;
    log_to(log_, LogLevel::Error, "representation",
           std::string(backend->name()) + " could not initialize for " + to_string(hint) +
               "; keeping " +
               (old != nullptr ? std::string(old->name()) : std::string("no backend")));
    return InstallStatus::Refused;
  }
  backends_[hint_index(hint)] = backend;
  // Move every slot the old backend held for this hint (activate in the new
  // one first, then release the old one).
  for (std::uint32_t s = 0; s < slots_.size(); ++s) {
    SlotRecord& r = slots_[s];
    if (!r.live) continue;
    r.refused_levels = 0;  // a new backend anywhere may change any slot's fallback
    reconcile(s);
    if (old != nullptr && hint_of(old) == RepresentationHint::None) {
      // The old backend is gone from every hint: release it now, even where
      // the new one is not active yet (the caller may destroy it).
      if (r.pending == old) {
        old->deactivate(SlotId{s}, r.id);
        r.pending = nullptr;
      }
      if (r.drawn == old) {
        old->deactivate(SlotId{s}, r.id);
        ++counters_.deactivations;
        r.drawn = nullptr;
        reconcile(s);
      }
    }
  }
  if (old != nullptr && hint_of(old) == RepresentationHint::None) old->deinitialize();
  log_to(log_, LogLevel::Info, "representation",
         std::string(to_string(hint)) + " drawn by " +
             (backend != nullptr ? std::string(backend->name()) : "nothing"));
  return InstallStatus::Installed;
}

void RepresentationLayer::ensure_slot(std::uint32_t slot) {
  while (slots_.size() <= slot) {
    SlotRecord record;
    record.track = PoseTrack(config_.interpolation);
    slots_.push_back(std::move(record));
  }
}

EntityState RepresentationLayer::state_of(const EntityView& view, const SlotRecord& record) const {
  EntityState s;
  s.id = view.id;
  s.slot = view.slot;
  s.kind = view.kind;
  s.archetype = view.archetype;
  s.sim_tier = view.sim_tier;
  s.representation = view.representation;
  s.policy = view.policy;
  s.retiring = view.retiring;
  s.corpse = view.corpse;
  s.lane = view.anchor.lane;
  s.s_mm = view.anchor.s_mm;
  s.speed_mmps = view.anchor.speed_mmps;
  if (!record.track.ring().empty()) {
    s.pose = record.track.ring().newest();
    s.server_time_us = record.track.ring().newest_time_us();
  }
  return s;
}

void RepresentationLayer::set_lease(std::uint32_t slot, const Lease& lease) {
  SlotRecord& r = slots_[slot];
  if (r.lease_known && r.lease == lease) return;
  r.lease = lease;
  r.lease_known = true;
  if (!r.lease_queued) {
    r.lease_queued = true;
    lease_queue_.push_back(slot);
    ++counters_.leases_queued;
  }
}

RepresentationLayer::Attempt RepresentationLayer::try_activate(std::uint32_t slot, bool retry) {
  SlotRecord& r = slots_[slot];
  assert(r.pending != nullptr);
  const EntityView* view = mirror_.at(SlotId{slot});
  assert(view != nullptr);
  const ActivationResult result =
      r.pending->activate(SlotId{slot}, r.id, view->archetype, r.hint, state_of(*view, r));
  if (retry) {
    ++counters_.activation_retries;
  } else {
    ++counters_.activations;
  }
  r.pending_reason = result.reason;
  if (result.status == ActivationStatus::Refused) {
    if (r.pending_reason == UnassignedReason::None) r.pending_reason = UnassignedReason::Other;
    log_to(log_, LogLevel::Debug, "representation",
           std::string(r.pending->name()) + " refused slot " + std::to_string(slot) + " (" +
               to_string(r.pending_reason) + ")");
    // Released at once (it may hold a place in a queue); the fallback goes on
    // with the next coarser backend.
    mark_refused(r, r.pending);
    r.pending->deactivate(SlotId{slot}, r.id);
    r.pending = nullptr;
    return Attempt::Refused;
  }
  if (r.pending->is_instance_active(SlotId{slot})) {
    finish_move(slot);
    return Attempt::Done;
  }
  if (r.pending_reason == UnassignedReason::None) r.pending_reason = UnassignedReason::Loading;
  return Attempt::Waiting;
}

void RepresentationLayer::mark_refused(SlotRecord& r, const RenderBackend* backend) const {
  for (std::size_t level = 0; level < backends_.size(); ++level) {
    if (backends_[level] == backend) r.refused_levels |= static_cast<std::uint8_t>(1U << level);
  }
}

std::optional<std::size_t> RepresentationLayer::target_level(const SlotRecord& r) const {
  if (r.hint == RepresentationHint::None) return std::nullopt;
  const std::size_t first = hint_index(r.hint);
  const std::size_t last = config_.fallback_to_coarser ? backends_.size() - 1 : first;
  for (std::size_t level = first; level <= last; ++level) {
    if (backends_[level] != nullptr && (r.refused_levels & (1U << level)) == 0) return level;
  }
  return std::nullopt;
}

void RepresentationLayer::cover(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  if (!config_.cover_while_pending || r.drawn != nullptr || r.pending == nullptr) return;
  const EntityView* view = mirror_.at(SlotId{slot});
  assert(view != nullptr);
  // Only backends coarser than the pending one stand in, the first that
  // draws at once; one that is not active at once is released again.
  std::size_t level = hint_index(r.hint);
  while (level < backends_.size() && backends_[level] != r.pending) ++level;
  for (++level; level < backends_.size(); ++level) {
    RenderBackend* b = backends_[level];
    if (b == nullptr || b == r.pending || (r.refused_levels & (1U << level)) != 0) continue;
    const ActivationResult result =
        b->activate(SlotId{slot}, r.id, view->archetype, r.hint, state_of(*view, r));
    ++counters_.activations;
    if (result.status == ActivationStatus::Active && b->is_instance_active(SlotId{slot})) {
      r.drawn = b;
      ++counters_.covers;
      return;
    }
    if (result.status == ActivationStatus::Refused) mark_refused(r, b);
    b->deactivate(SlotId{slot}, r.id);
  }
}

void RepresentationLayer::add_pending(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  if (r.in_pending_list) return;
  r.in_pending_list = true;
  pending_.push_back(slot);
}

void RepresentationLayer::finish_move(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  assert(r.pending != nullptr);
  assert(r.pending != r.drawn);
  RenderBackend* old = r.drawn;
  r.drawn = r.pending;
  r.pending = nullptr;
  r.pending_reason = UnassignedReason::None;
  if (old != nullptr) {
    // The new instance is active: only now does the old one go (no gap).
    old->deactivate(SlotId{slot}, r.id);
    ++counters_.deactivations;
    ++counters_.moves;
  }
}

void RepresentationLayer::reconcile(std::uint32_t slot) {
  reconcile_routes(slot);
  notify(slot);
}

void RepresentationLayer::notify(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  const RepresentationHint now = r.live ? hint_of(r.drawn) : RepresentationHint::None;
  if (now == r.told) return;
  r.told = now;
  if (observer_ != nullptr) observer_->on_drawn(r.id, SlotId{slot}, now);
}

void RepresentationLayer::reconcile_routes(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  assert(r.live);
  const std::optional<std::size_t> level = target_level(r);
  RenderBackend* want = level ? backends_[*level] : nullptr;
  if (r.pending != nullptr && r.pending != want) {
    r.pending->deactivate(SlotId{slot}, r.id);  // cancels a wait, frees its place in a queue
    r.pending = nullptr;
  }
  if (want == nullptr) {
    const bool refused = r.hint != RepresentationHint::None && r.refused_levels != 0;
    if (refused && r.drawn != nullptr) {
      // Every backend that could take it refused: what draws it stays.
      set_lease(slot, Lease{r.id, LeaseState::Preserved, hint_of(r.drawn), UnassignedReason::None});
      return;
    }
    if (r.drawn != nullptr) {
      r.drawn->deactivate(SlotId{slot}, r.id);
      ++counters_.deactivations;
      r.drawn = nullptr;
    }
    set_lease(slot, r.hint == RepresentationHint::None
                        ? Lease{r.id, LeaseState::Released, RepresentationHint::None,
                                UnassignedReason::None}
                        : Lease{r.id, LeaseState::Unassigned, RepresentationHint::None,
                                refused ? r.pending_reason : UnassignedReason::Other});
    return;
  }
  if (r.drawn != want && r.pending == nullptr) {
    r.pending = want;
    switch (try_activate(slot, false)) {
      case Attempt::Refused:
        reconcile_routes(slot);  // the next coarser backend (at most three levels deep)
        return;
      case Attempt::Waiting:
        add_pending(slot);
        break;
      case Attempt::Done:
        break;
    }
  }
  cover(slot);
  assert(r.drawn != r.pending || r.drawn == nullptr);
  if (r.drawn == want) {
    set_lease(slot, Lease{r.id, LeaseState::Assigned, static_cast<RepresentationHint>(*level),
                          UnassignedReason::None});
  } else if (r.drawn != nullptr) {
    set_lease(slot, Lease{r.id, LeaseState::Preserved, hint_of(r.drawn), UnassignedReason::None});
  } else {
    set_lease(slot,
              Lease{r.id, LeaseState::Unassigned, RepresentationHint::None, r.pending_reason});
  }
}

void RepresentationLayer::release(std::uint32_t slot) {
  SlotRecord& r = slots_[slot];
  if (!r.live) return;
  if (r.pending != nullptr) r.pending->deactivate(SlotId{slot}, r.id);
  if (r.drawn != nullptr) {
    r.drawn->deactivate(SlotId{slot}, r.id);
    ++counters_.deactivations;
  }
  r.drawn = nullptr;
  r.pending = nullptr;
  r.refused_levels = 0;
  r.live = false;
  r.lease_known = false;
  notify(slot);
  r.track.reset();  // a reused slot never starts from a departed entity's history
  // Its queued lease (if any) is dropped in take_leases(); pending_ likewise.
}

ApplySummary RepresentationLayer::apply(const Delta& delta, std::int64_t local_receive_us) {
  listener_->entered_.clear();
  listener_->changed_.clear();
  corpses_learned_.clear();
  ApplySummary summary = mirror_.apply(delta, listener_.get());
  ++counters_.deltas;
  const auto server_time_us = static_cast<std::int64_t>(delta.sim_time_us);
  const bool rewound = counters_.deltas > 1 && server_time_us < last_sample_time_us_;
  if (rewound) {
    // Time went back (restore, load): a new timeline. Its clock starts
    // afresh (an offset learnt on the old one would read the new frames as
    // late) and render time may go back once, to the new timeline; held at
    // the old time, every entity would freeze until the new one caught up.
    clock_.reset();
    last_render_time_us_.reset();
    ++counters_.rewinds;
  }
  clock_.observe(server_time_us, local_receive_us);
  if (delta.baseline || rewound) {
    // History of another timeline (or of before the baseline) is no use.
    for (SlotRecord& r : slots_) r.track.reset();
  }
  last_sample_time_us_ = server_time_us;
  mirror_.for_each([&](const EntityView& view) {
    SlotRecord& r = slots_[view.slot.value];
    assert(r.live && r.id == view.id);
    if (const auto pose = mirror_.pose(view, delta.step)) {
      r.track.push(server_time_us, RenderPose{pose->x_m, pose->y_m, pose->z_m, pose->heading_rad});
      ++counters_.samples;
    }
  });
  for (std::uint32_t s : listener_->entered_) {
    if (slots_[s].live) reconcile(s);
  }
  for (std::uint32_t s : listener_->changed_) {
    if (slots_[s].live) {
      slots_[s].refused_levels = 0;
      reconcile(s);
    }
  }
  mirror_.for_each([&](const EntityView& view) {
    SlotRecord& r = slots_[view.slot.value];
    if (r.drawn == nullptr && r.pending == nullptr) return;
    const EntityState state = state_of(view, r);
    for (RenderBackend* b : {r.drawn, r.pending}) {
      if (b != nullptr && !b->extract_update(state, server_time_us, view.slot))
        ++counters_.updates_skipped;
    }
  });
  return summary;
}

void RepresentationLayer::render(std::int64_t local_now_us) {
  const auto server_now = clock_.server_time_at(local_now_us);
  if (!server_now) return;
  render_at(*server_now - render_delay_us());
}

void RepresentationLayer::render_at(std::int64_t render_time_us) {
  if (last_render_time_us_ && render_time_us < *last_render_time_us_)
    render_time_us = *last_render_time_us_;
  last_render_time_us_ = render_time_us;
  ++counters_.frames;
  // Retry activations that are not complete, oldest first, bounded. The
  // list is taken out first: what is still pending goes back in order.
  if (!pending_.empty()) {
    std::vector<std::uint32_t> list;
    list.swap(pending_);
    std::uint32_t budget = config_.activation_retries_per_frame;
    for (std::uint32_t s : list) {
      SlotRecord& r = slots_[s];
      assert(r.in_pending_list);
      r.in_pending_list = false;
      if (!r.live || r.pending == nullptr) continue;
      if (r.pending->is_instance_active(SlotId{s})) {
        finish_move(s);
      } else if (budget == 0) {
        add_pending(s);
        continue;
      } else {
        --budget;
        if (try_activate(s, true) == Attempt::Waiting) add_pending(s);
      }
      reconcile(s);
    }
  }
  std::array<RenderBackend*, 3> unique{};
  std::size_t n = 0;
  for (RenderBackend* b : backends_) {
    if (b != nullptr && std::find(unique.begin(), unique.begin() + static_cast<std::ptrdiff_t>(n),
                                  b) == unique.begin() + static_cast<std::ptrdiff_t>(n)) {
      unique[n++] = b;
    }
  }
  for (std::size_t i = 0; i < n; ++i) unique[i]->begin_frame(render_time_us);
  for (std::uint32_t s = 0; s < slots_.size(); ++s) {
    const SlotRecord& r = slots_[s];
    if (!r.live || r.drawn == nullptr) continue;
    const Sampled<RenderPose> pose = r.track.sample(render_time_us, config_.interpolation);
    if (pose.mode == SampleMode::Empty) continue;
    r.drawn->apply_interpolation(SlotId{s}, render_time_us, pose.value);
  }
  for (std::size_t i = 0; i < n; ++i) unique[i]->end_frame();
}

std::vector<Lease> RepresentationLayer::take_leases(std::size_t max) {
  std::vector<Lease> out;
  out.reserve(std::min(max, lease_queue_.size()));
  std::size_t used = 0;
  for (; used < lease_queue_.size() && out.size() < max; ++used) {
    SlotRecord& r = slots_[lease_queue_[used]];
    assert(r.lease_queued);
    r.lease_queued = false;
    if (r.live && r.lease_known) out.push_back(r.lease);
  }
  lease_queue_.erase(lease_queue_.begin(),
                     lease_queue_.begin() + static_cast<std::ptrdiff_t>(used));
  return out;
}

std::optional<Sampled<RenderPose>> RepresentationLayer::sample(SlotId slot,
                                                               std::int64_t render_time_us) const {
  if (!slot.valid() || slot.value >= slots_.size() || !slots_[slot.value].live) return std::nullopt;
  return slots_[slot.value].track.sample(render_time_us, config_.interpolation);
}

std::optional<SlotRepresentation> RepresentationLayer::slot(SlotId slot) const {
  if (!slot.valid() || slot.value >= slots_.size() || !slots_[slot.value].live) return std::nullopt;
  const SlotRecord& r = slots_[slot.value];
  return SlotRepresentation{r.hint, hint_of(r.drawn), r.pending != nullptr, r.lease};
}

std::optional<std::int64_t> RepresentationLayer::last_render_time_us() const {
  return last_render_time_us_;
}

std::size_t RepresentationLayer::bytes_per_slot() const {
  // The record, its ring of samples (time + pose), and the mirror's entry.
  return sizeof(SlotRecord) +
         config_.interpolation.ring_capacity * (sizeof(std::int64_t) + sizeof(RenderPose)) +
         sizeof(EntityView) + sizeof(std::uint8_t);
}

}  // namespace bustle::client
