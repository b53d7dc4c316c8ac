// Per-client streaming (protocol v2): interest, representation hints within
// budgets, and lane-relative dead-reckoned deltas.
//
// For every published frame, one client's tracker
//   1. selects its interest: entities of its kinds within radius_m of one of
//      its observers (kept until 1.1 x radius once received: hysteresis),
//      through the frame's spatial index; a client without observers sees the
//      whole city;
//   2. ranks them by the importance-weighted distance (importance.hpp) from
//      its own observers (from the world's observers when it has none) and
//      assigns representation hints within its budgets (seed 001's zone
//      budget): Full-tier entities compete for Actor, then Full and
//      Simulated for Instanced, then everyone for Marker; the rest is None and
//      not sent (it counts as distant dots). An entity keeps its hint while its
//      distance is within 1 / kHintKeepFactor of the last one taken (no
//      flapping at the boundary). At most `entries_per_step_max` entities
//      enter per step (a baseline is exempt), nearest first;
//   3. merge-walks the chosen set (sorted by entity index) against what the
//      client was last sent: entered, left, EntityChange events for tier /
//      hint / policy, and a motion record only where the client's prediction
//      (proto/motion.hpp) leaves the tolerance or the lane or speed changed.
// Because it diffs against what was *sent*, skipping frames (slow client)
// yields one coalesced delta, never a backlog. Nothing here feeds back into
// the simulation: interest, hints and what each client predicts never touch
// the digest.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bustle/core/importance.hpp"
#include "bustle/core/status.hpp"
#include "bustle/net/published_frame.hpp"
#include "bustle/proto/motion.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::net {

inline constexpr std::size_t kObserversPerClientMax = 16;
inline constexpr double kObserverRadiusMaxM = 100'000.0;
inline constexpr double kInterestExitFactor = 1.1;  // received entities stay until 1.1 x radius
inline constexpr double kHintKeepFactor = 0.8;      // a held hint ranks at 0.8 x its distance
inline constexpr std::uint32_t kActorBudgetMax = 4096;
inline constexpr std::uint32_t kInstanceBudgetMax = 65536;
inline constexpr std::uint32_t kMarkerBudgetMax = 1u << 20;
inline constexpr std::uint16_t kMotionToleranceMmMax = 1000;

struct ClientObserver {
  double x_m = 0.0;
  double y_m = 0.0;
  double z_m = 0.0;
  bool has_heading = false;
  double heading_rad = 0.0;
  double radius_m = 150.0;
};

struct RepresentationBudgets {
  std::uint32_t actors = 256;
  std::uint32_t instances = 4096;
  std::uint32_t markers = 16384;
};

// What a client asked for in Subscribe / UpdateInterest, validated.
struct ClientInterest {
  std::uint32_t kind_mask = ~0u;  // bit k = EntityKind k
  std::vector<ClientObserver> observers;
  RepresentationBudgets budgets;
  std::uint16_t motion_tolerance_mm = 10;
};

// What a client with this interest may read (coverage.hpp): inside the exit
// radius of each of its observers, or the whole city when it has none.
CoverageNeed coverage_need(const ClientInterest& interest);

// Reads and validates a Subscribe (kinds, observers, budgets, tolerance).
// Returns Ok or the first problem, InvalidArgument naming the field
// ("observers[2].radius_m: ..."); `out` is only written when valid. Without budgets the client gets
// `default_budgets` (the server's, scaled by its quality setting).
core::Status read_subscribe(const wire::Subscribe& sub, ClientInterest& out,
                            const RepresentationBudgets& default_budgets = {});
// Same for UpdateInterest: observers and budgets replace those of `out`.
core::Status read_update_interest(const wire::UpdateInterest& upd, ClientInterest& out);

// Static facts every tracker needs, taken from the Welcome.
struct StreamContext {
  std::uint32_t step_us = 100'000;
  std::vector<std::uint32_t> lane_length_mm;
  std::vector<std::uint32_t> lane_chain;  // chain of each lane (Delta.dots index)
  std::size_t chain_count = 0;
  core::ImportanceSpec importance;
  std::vector<std::string> garage_ids;
  std::vector<std::string> vehicle_id_formats;  // per garage (GarageSpec::vehicle_id_format)
  std::string scenario_id;                      // for {scenario} in those formats
  std::vector<std::uint32_t> community_first_resident;  // ascending
  std::vector<std::string> community_ids;
  std::uint32_t entries_per_step_max = 1024;

  std::string label(std::uint64_t ref) const;
};

// A uniform grid over entity positions, built once per frame (network
// thread) and queried by every client with observers.
class SpatialIndex {
 public:
  void build(const PublishedFrame& frame, double cell_m = 64.0);
  const PublishedFrame* frame() const { return frame_; }
  // Calls fn(position in frame.entities) for every entity within radius_m of
  // (x, y); each entity at most once per call.
  template <class F>
  void for_each_within(double x_m, double y_m, double radius_m, F&& fn) const;

 private:
  const PublishedFrame* frame_ = nullptr;
  double cell_m_ = 64.0;
  double min_x_ = 0.0, min_y_ = 0.0;
  std::int64_t cols_ = 0, rows_ = 0;
  std::vector<std::uint32_t> cell_start_;  // per cell + 1: prefix sums into by_cell_
  std::vector<std::uint32_t> by_cell_;     // frame positions, grouped by cell
  std::vector<std::uint32_t> cell_of_;     // build scratch: each entity's cell
  std::vector<std::uint32_t> fill_;        // build scratch: next free slot per cell
};

class StreamTracker {
 public:
  struct Counts {
    std::uint32_t entered = 0;
    std::uint32_t motion = 0;
    std::uint32_t changes = 0;
    std::uint32_t left = 0;
    std::uint32_t retiring = 0;
    std::uint32_t received = 0;      // entities this client has after the delta
    std::uint32_t truncated = 0;     // in interest but over the budgets
    std::uint32_t per_hint[4] = {};  // by RepresentationHint
  };

  // Replaces the interest. With `baseline`, the next encode() sends
  // everything as entered (Subscribe); without, entities enter and leave as
  // the new interest requires (UpdateInterest).
  void set_interest(const ClientInterest& interest, bool baseline);
  const ClientInterest& interest() const { return interest_; }
  // The next encode() sends a baseline (world replaced, resubscribe).
  void reset();
  bool baseline_pending() const { return baseline_pending_; }

  // Encodes a finished ServerFrame{Delta} into fbb (Clear()ed first). `index`
  // must be built over `frame` when the client has observers (may be null
  // otherwise). With `send_dots`, Delta.dots carries this client's dots.
  Counts encode(const PublishedFrame& frame, const SpatialIndex* index, const StreamContext& ctx,
                flatbuffers::FlatBufferBuilder& fbb, bool send_dots);

  std::size_t received() const { return sent_.size(); }

  // Leases (client.fbs LeaseReport): what the client applied for entities it
  // receives, as of `step` (the latest frame). Entries for entities it does
  // not receive (left meanwhile, or never sent) are counted as unknown and
  // change nothing.
  // With `held`, appends the entities the report says the client now holds
  // a representation of (Assigned or Preserved, representation not None).
  void apply_leases(const flatbuffers::Vector<const wire::LeaseEntry*>& entries, std::uint64_t step,
                    std::vector<core::EntityId>* held = nullptr);

  struct LeaseSummary {
    std::uint32_t requested[3] = {};  // by hint: Actor, Instanced, Marker
    std::uint32_t applied[3] = {};
    std::uint32_t waiting = 0;  // applied != requested
    std::uint32_t waiting_past_grace = 0;
    std::uint32_t past_grace_by_reason[5] = {};  // UnassignedReason; None = never reported
    std::uint64_t reports = 0;
    std::uint64_t entries = 0;
    std::uint64_t unknown_entries = 0;
    std::uint64_t entries_by_state[4] =
        {};  // known entries by LeaseState (Assigned, Unassigned, Released, Preserved)
  };
  // Requested against applied now; "past grace" = waiting since more than
  // `grace_steps` before `step`. For the last encoded step and the grace set
  // here (what Stats and QueryLeases ask) it is kept up to date as entities
  // are sent and leases reported, so asking costs O(1), however many
  // entities the client holds; any other (step, grace) recounts.
  LeaseSummary lease_summary(std::uint64_t step, std::uint32_t grace_steps) const;
  // The same by walking every received entity (the reference the kept
  // summary is tested against).
  LeaseSummary recount_lease_summary(std::uint64_t step, std::uint32_t grace_steps) const;
  void set_lease_grace_steps(std::uint32_t grace_steps);

 private:
  static constexpr std::uint8_t kNotReported = 0xff;
  struct Sent {
    core::EntityId id;
    proto::MotionAnchor anchor;
    std::uint8_t hint = 3;  // RepresentationHint
    std::uint8_t sim_tier = 0;
    std::uint8_t policy = 0;
    bool retiring = false;
    bool corpse = false;
    bool pedestrian = false;  // kind Pedestrian (Delta.dots)
    // Lease: what the client applied (RepresentationHint; kNotReported until
    // a report names it; None after Released or Unassigned), its reason, and
    // the step since which applied has differed from the hint.
    std::uint8_t applied = kNotReported;
    std::uint8_t unassigned_reason = 0;
    std::uint64_t waiting_since = 0;
  };
  // What select() reads of a frame entry, carried with it so that the
  // merge with what was sent and the ranking never read the frame again
  // (its 64-byte entries lie anywhere in a frame of up to a million).
  struct Candidate {
    core::EntityId id;
    std::uint32_t pos = 0;     // in frame.entities
    std::uint8_t current = 3;  // hint last sent (3 = None: not received)
    std::uint8_t hint = 3;     // chosen this step
    std::uint8_t sim_tier = 0;
    bool retiring = false;
    // In select(): the smallest inside_ratio over the observers; in rank():
    // the effective distance, scaled when the hint is held.
    double key = 0.0;
    double distance = 0.0;  // effective distance
  };
  // A frame entry as a candidate: what rank() needs of it, with its
  // effective distance from the field prepared for this encode.
  Candidate candidate(const PublishedEntity& e, std::uint32_t pos, double ratio) const;
  // The field of the observers that rank this client: its own, or the
  // world's when it has none.
  void prepare_field(const PublishedFrame& frame, const StreamContext& ctx);

  // The three steps of encode(): which entities this client may receive
  // (select), their hints within the budgets (rank), and the records that
  // bring the client from what it was sent to this frame (diff_against_sent).
  void select(const PublishedFrame& frame, const SpatialIndex* index);
  void rank(const StreamContext& ctx);
  void diff_against_sent(const PublishedFrame& frame, const StreamContext& ctx, Counts& counts);
  // Adds (sign 1) or takes out (sign -1) one received entity's part of the
  // kept lease summary (lease_step_, lease_grace_steps_).
  void count_lease(const Sent& s, int sign);
  static void count_sent_lease(LeaseSummary& sum, const Sent& s, std::uint64_t step,
                               std::uint32_t grace_steps, std::uint32_t d);
  // One entity the client already holds: its motion record (only when the
  // prediction leaves the tolerance), field changes and the lease carried over.
  void update_received(const Sent& prev, const PublishedEntity& cur, std::uint8_t hint,
                       std::uint64_t step, const StreamContext& ctx, Sent& next);
  // The Delta's optional parts: signal phases changed since what this client
  // received, and per-chain counts of the pedestrians it sees only as dots.
  flatbuffers::Offset<flatbuffers::Vector<const wire::SignalPhaseState*>> encode_signals(
      const PublishedFrame& frame, flatbuffers::FlatBufferBuilder& fbb);
  flatbuffers::Offset<flatbuffers::Vector<const wire::ChainDots*>> encode_dots(
      const PublishedFrame& frame, const StreamContext& ctx, flatbuffers::FlatBufferBuilder& fbb);
  // dot_counts_ by walking the frame (a frame without chain_pedestrians).
  void walk_dots(const PublishedFrame& frame, const StreamContext& ctx);

  ClientInterest interest_;
  bool baseline_pending_ = true;
  std::vector<Sent> sent_;  // sorted by id.index
  std::vector<Sent> next_sent_;
  std::vector<Candidate> cand_;
  std::vector<Candidate> scratch_;    // sort_by_pos
  std::vector<std::uint32_t> stamp_;  // per frame position: last selection stamp
  std::vector<std::uint32_t> slot_;   // per frame position: its candidate (valid when stamped)
  std::uint32_t stamp_value_ = 0;
  std::vector<std::uint32_t> pool_;  // candidate positions being ranked
  core::ImportanceField field_;
  std::vector<core::Vec2> obs_points_;
  std::vector<core::ObserverView> obs_views_;
  std::uint32_t truncated_ = 0;
  std::uint64_t lease_reports_ = 0, lease_entries_ = 0, lease_unknown_ = 0;
  std::uint64_t lease_by_state_[4] = {};
  // The received entities' part of lease_summary(lease_step_, lease_grace_steps_):
  // requested, applied, waiting and past grace (the other fields stay 0).
  LeaseSummary leases_kept_;
  std::uint64_t lease_step_ = 0;  // the step of the last encode
  std::uint32_t lease_grace_steps_ = 0;
  // Encoding scratch.
  std::vector<wire::EntityEnter> entered_;
  std::vector<flatbuffers::Offset<wire::EntityLabel>> labels_;
  std::vector<std::uint32_t> label_index_;
  std::vector<std::uint64_t> label_ref_;
  proto::MotionWriter motion_;
  std::vector<wire::EntityChange> changes_;
  std::vector<wire::EntityId> left_;
  std::vector<wire::EntityId> retiring_;
  std::vector<wire::SignalPhaseState> signals_;
  std::vector<std::uint8_t> signals_sent_;  // phase last sent per signal (0xff: never)
  std::vector<wire::ChainDots> dots_;
  std::vector<std::uint32_t> dot_counts_;
};

// Sorts items by their unique 32-bit `pos`: a radix sort, 11 bits a pass
// (two passes below 2^22), a comparison sort for short lists. Same order as
// std::sort by pos, in linear time: a client's candidates (frame positions)
// arrive cell by cell, 20 000 of them for a district.
template <class T>
void sort_by_pos(std::vector<T>& items, std::vector<T>& scratch) {
  if (items.size() < 512) {
    std::sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.pos < b.pos; });
    return;
  }
  constexpr unsigned kBits = 11;
  constexpr std::uint32_t kMask = (1u << kBits) - 1;
  const std::size_t n = items.size();
  std::uint32_t top = 0;
  for (const T& t : items) top |= t.pos;
  // Grown only: the buffers swap each pass, so either may be the longer;
  // the first n entries are the ones being sorted.
  if (scratch.size() < n) scratch.resize(n);
  for (unsigned shift = 0; shift < 32 && (top >> shift) != 0; shift += kBits) {
    std::array<std::uint32_t, kMask + 2> start{};
    for (std::size_t k = 0; k < n; ++k) ++start[((items[k].pos >> shift) & kMask) + 1];
    for (std::uint32_t b = 0; b <= kMask; ++b) start[b + 1] += start[b];
    for (std::size_t k = 0; k < n; ++k)
      scratch[start[(items[k].pos >> shift) & kMask]++] = items[k];
    items.swap(scratch);
  }
  items.resize(n);  // only ever shrinks here
}

// How far ahead SpatialIndex::for_each_within prefetches frame entries.
inline constexpr std::uint32_t kPrefetchAhead = 8;

template <class F>
void SpatialIndex::for_each_within(double x_m, double y_m, double radius_m, F&& fn) const {
  if (frame_ == nullptr || cols_ == 0) return;
  const auto clamp_col = [&](double v) {
    return std::max<std::int64_t>(
        0, std::min<std::int64_t>(cols_ - 1, static_cast<std::int64_t>((v - min_x_) / cell_m_)));
  };
  const auto clamp_row = [&](double v) {
    return std::max<std::int64_t>(
        0, std::min<std::int64_t>(rows_ - 1, static_cast<std::int64_t>((v - min_y_) / cell_m_)));
  };
  const std::int64_t c0 = clamp_col(x_m - radius_m), c1 = clamp_col(x_m + radius_m);
  const std::int64_t r0 = clamp_row(y_m - radius_m), r1 = clamp_row(y_m + radius_m);
  const double r2 = radius_m * radius_m;
  for (std::int64_t r = r0; r <= r1; ++r) {
    for (std::int64_t c = c0; c <= c1; ++c) {
      const std::size_t cell = static_cast<std::size_t>(r * cols_ + c);
      const std::uint32_t end = cell_start_[cell + 1];
      for (std::uint32_t k = cell_start_[cell]; k < end; ++k) {
        // The entries of a cell lie anywhere in the frame: fetch ahead.
        if (k + kPrefetchAhead < end)
          __builtin_prefetch(&frame_->entities[by_cell_[k + kPrefetchAhead]]);
        const PublishedEntity& e = frame_->entities[by_cell_[k]];
        const double dx = e.x_m - x_m, dy = e.y_m - y_m;
        if (dx * dx + dy * dy <= r2) fn(by_cell_[k]);
      }
    }
  }
}

}  // namespace bustle::net
