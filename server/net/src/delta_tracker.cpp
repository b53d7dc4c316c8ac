#include "bustle/net/delta_tracker.hpp"

namespace bustle::net {
namespace {

wire::EntityState to_wire(const QuantizedEntity& e) {
  return wire::EntityState(wire::EntityId(e.id.index, e.id.generation), e.x_cm, e.y_cm,
                           e.heading_q, e.speed_cmps, static_cast<wire::EntityKind>(e.kind));
}

}  // namespace

void DeltaTracker::set_kind_mask(std::uint32_t mask) {
  kind_mask_ = mask;
  reset();
}

void DeltaTracker::reset() {
  baseline_pending_ = true;
  sent_.clear();
}

DeltaTracker::Counts DeltaTracker::encode(const PublishedFrame& frame, flatbuffers::FlatBufferBuilder& fbb,
                                          const std::vector<std::uint16_t>* dots_per_chain) {
  entered_.clear();
  updated_.clear();
  left_.clear();
  retiring_.clear();
  next_sent_.clear();

  std::size_t a = 0;  // cursor in sent_
  for (const QuantizedEntity& cur : frame.entities) {
    if (!wanted(cur)) continue;
    // Everything sent with a smaller index is gone.
    while (a < sent_.size() && sent_[a].id.index < cur.id.index) {
      left_.emplace_back(sent_[a].id.index, sent_[a].id.generation);
      ++a;
    }
    bool announced_retiring = false;
    if (a < sent_.size() && sent_[a].id.index == cur.id.index) {
      const QuantizedEntity& prev = sent_[a];
      if (prev.id.generation == cur.id.generation && !(prev.retiring && !cur.retiring)) {
        if (!prev.same_state(cur)) updated_.push_back(to_wire(cur));
        announced_retiring = prev.retiring;
      } else {
        // Slot reused by a new identity, or a retiring entity that came back
        // (dormant and active again, unseen by this client): the old one
        // left, the new one entered.
        left_.emplace_back(prev.id.index, prev.id.generation);
        entered_.push_back(to_wire(cur));
      }
      ++a;
    } else {
      entered_.push_back(to_wire(cur));
    }
    if (cur.retiring && !announced_retiring) retiring_.emplace_back(cur.id.index, cur.id.generation);
    next_sent_.push_back(cur);
  }
  for (; a < sent_.size(); ++a) left_.emplace_back(sent_[a].id.index, sent_[a].id.generation);
  sent_.swap(next_sent_);

  fbb.Clear();
  const auto entered = fbb.CreateVectorOfStructs(entered_);
  const auto updated = fbb.CreateVectorOfStructs(updated_);
  const auto left = fbb.CreateVectorOfStructs(left_);
  signals_.clear();
  for (std::size_t i = 0; i < frame.signal_phases.size(); ++i) {
    signals_.emplace_back(static_cast<std::uint16_t>(i), static_cast<wire::SignalPhase>(frame.signal_phases[i]));
  }
  const auto signals = fbb.CreateVectorOfStructs(signals_);
  flatbuffers::Offset<flatbuffers::Vector<const wire::ChainDots*>> dots = 0;
  if (dots_per_chain != nullptr) {
    dots_.clear();
    for (std::size_t c = 0; c < dots_per_chain->size(); ++c) {
      dots_.emplace_back(static_cast<std::uint32_t>(c), (*dots_per_chain)[c]);
    }
    dots = fbb.CreateVectorOfStructs(dots_);
  }
  const auto retiring = retiring_.empty() ? 0 : fbb.CreateVectorOfStructs(retiring_);
  const auto delta = wire::CreateDelta(fbb, frame.step, frame.sim_time_us, frame.digest, baseline_pending_,
                                       entered, updated, left, signals, dots, retiring);
  fbb.Finish(wire::CreateServerFrame(fbb, wire::ServerMessage::Delta, delta.Union()),
             wire::ServerFrameIdentifier());
  baseline_pending_ = false;
  return {static_cast<std::uint32_t>(entered_.size()), static_cast<std::uint32_t>(updated_.size()),
          static_cast<std::uint32_t>(left_.size()), static_cast<std::uint32_t>(retiring_.size())};
}

}  // namespace bustle::net
