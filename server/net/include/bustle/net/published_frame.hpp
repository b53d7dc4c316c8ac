// What the sim thread publishes after every step for the network side.
//
// The sim thread quantizes every entity once per step into a PublishedFrame
// (immutable, shared by all clients); each session then diffs it against what
// that client last received. Nothing here refers back to the World, so the
// network thread never touches simulation state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bustle/core/entity_id.hpp"
#include "bustle/core/world.hpp"

namespace bustle::net {

// Wire quantization (see proto/schema/server.fbs EntityState).
struct QuantizedEntity {
  core::EntityId id;
  std::int32_t x_cm = 0;
  std::int32_t y_cm = 0;
  std::uint16_t heading_q = 0;   // 1/65536 turn, 0 = +x, counter-clockwise
  std::uint16_t speed_cmps = 0;
  core::EntityKind kind = core::EntityKind::Pedestrian;
  // In the orphan set, fading out (lifecycle Retiring): still streamed, at
  // its last pose with speed 0, until final deletion. Not part of the
  // quantized state; the tracker announces it once (Delta.retiring).
  bool retiring = false;

  // Same entity and same quantized state: nothing to send.
  bool same_state(const QuantizedEntity& o) const {
    return x_cm == o.x_cm && y_cm == o.y_cm && heading_q == o.heading_q &&
           speed_cmps == o.speed_cmps && kind == o.kind;
  }
};

struct PublishedFrame {
  std::uint64_t step = 0;
  std::uint64_t sim_time_us = 0;
  std::uint64_t digest = 0;
  // Bumped whenever the world is replaced (restore, load): sessions then send
  // a baseline, because ids of the old and new world must not be diffed.
  std::uint64_t world_epoch = 0;
  std::vector<QuantizedEntity> entities;  // sorted by id.index, unique indices
  std::vector<std::uint8_t> signal_phases;  // per scenario signal (core::SignalPhase)
  // Distant dots (DESIGN §3): on dot steps (step % pedestrians.dots_every_steps
  // == 0) the anonymous count per lane chain, indexed like Welcome.chains and
  // clamped to 65535; null on other steps. Shared so that the server can keep
  // the latest dots for clients that skipped the frame they came with.
  std::shared_ptr<const std::vector<std::uint16_t>> dots;
};

std::int32_t quantize_cm(double metres);
std::uint16_t quantize_heading(double radians);
std::uint16_t quantize_speed(double mps);

// Builds the frame for the world's current step (sim thread): pedestrians,
// vehicles and the orphans still fading (retiring), sorted by index; signal
// phases; and the dots on dot steps.
std::shared_ptr<const PublishedFrame> make_published_frame(const core::World& world,
                                                           std::uint64_t world_epoch = 0);

}  // namespace bustle::net
