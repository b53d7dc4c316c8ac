// RenderBackend: what turns the entities a client receives into something on
// screen. The representation layer (representation.hpp) is the only caller;
// a backend never reads the stream or the mirror itself, so an entity is
// never activated twice.
//
// Lifecycle of one instance, per SlotId (stable for the entity's lifetime;
// keep per-instance state in arrays indexed by SlotId::value):
//
//   (none) --activate()--> Active            is_instance_active(slot) == true
//   (none) --activate()--> Pending           a resource is not there yet (a pool
//                                            at its cap, a class still loading):
//                                            the layer calls activate() again each
//                                            frame (bounded) until the instance is
//                                            active, or until the entity leaves
//   (none) --activate()--> Refused           the backend cannot draw it at all;
//                                            retried only after a hint change or
//                                            a backend swap
//   Active/Pending --deactivate()--> (none)  release the resource and the state
//
// Per frame, for every slot the backend draws: begin_frame(), then
// apply_interpolation() per active slot, then end_frame(). Per received
// Delta and slot: extract_update() with the entity's state at that server
// time (a backend keeping its own sample buffers reads them there; the
// layer already interpolates the pose and passes it to apply_interpolation).
//
// A backend may refuse initialize(): it logs why and what to do, returns
// false, and the layer keeps the previous backend.
//
// Only SDK types cross this interface: no FlatBuffers, no Asio, no engine.
#pragma once

#include <cstdint>
#include <string_view>

#include "bustle/client/ids.hpp"
#include "bustle/client/interpolation.hpp"
#include "bustle/client/lease.hpp"
#include "bustle/client/log.hpp"
#include "bustle/client/stream.hpp"

namespace bustle::client {

// An entity's state at one server time, as a backend sees it.
struct EntityState {
  EntityId id;
  SlotId slot;
  EntityKind kind = EntityKind::Pedestrian;
  std::uint16_t archetype = 0;  // Welcome.archetypes index
  SimTier sim_tier = SimTier::Full;
  RepresentationHint representation = RepresentationHint::Actor;  // the server's hint
  ControlPolicy policy = ControlPolicy::RouteFollow;
  bool retiring = false;  // fading out; leaves later
  bool corpse = false;    // a corpse (KillPedestrian): lies still until it leaves
  std::uint32_t lane = 0;
  std::uint32_t s_mm = 0;
  std::uint32_t speed_mmps = 0;
  RenderPose pose;  // at `server_time_us`
  std::int64_t server_time_us = 0;
};

enum class ActivationStatus : std::uint8_t { Active, Pending, Refused };
const char* to_string(ActivationStatus v);

struct ActivationResult {
  ActivationStatus status = ActivationStatus::Active;
  UnassignedReason reason = UnassignedReason::None;  // Pending / Refused: why (reported in leases)

  static constexpr ActivationResult active() {
    return {ActivationStatus::Active, UnassignedReason::None};
  }
  static constexpr ActivationResult pending(UnassignedReason why) {
    return {ActivationStatus::Pending, why};
  }
  static constexpr ActivationResult refused(UnassignedReason why) {
    return {ActivationStatus::Refused, why};
  }
};

class RenderBackend {
 public:
  virtual ~RenderBackend() = default;

  // Short name for logs ("actor-pool", "headless").
  virtual std::string_view name() const = 0;

  // Called when the backend is installed. Return false, after logging the
  // reason and the remedy to `log`, when it cannot draw with what it has.
  virtual bool initialize(LogSink* /*log*/) { return true; }
  // Called when it is removed (swap or layer destruction), after every slot
  // it held was deactivated.
  virtual void deinitialize() {}

  // A remote entity is to be drawn by this backend (its hint, the archetype
  // and `initial` name what). May be called again for a slot that is not
  // active yet (a retry); must then not acquire a second resource.
  virtual ActivationResult activate(SlotId slot, EntityId id, std::uint16_t archetype,
                                    RepresentationHint hint, const EntityState& initial) = 0;
  // It left this backend (entity gone, hint changed, backend swapped).
  // Called for Active and for Pending instances alike.
  virtual void deactivate(SlotId slot, EntityId id) = 0;
  // A new sample of an entity this backend holds (active or pending). Return
  // false when the state is of no use to this backend (counted, not an error).
  virtual bool extract_update(const EntityState& /*state*/, std::int64_t /*server_time_us*/,
                              SlotId /*slot*/) {
    return true;
  }
  // Draw the slot at `render_time_us` (already behind by the interpolation
  // delay) at `pose`, interpolated by the layer.
  virtual void apply_interpolation(SlotId slot, std::int64_t render_time_us,
                                   const RenderPose& pose) = 0;
  // Whether the slot holds something drawn. False after activate() makes
  // the layer retry; the default (true) never retries.
  virtual bool is_instance_active(SlotId /*slot*/) const { return true; }

  // Frame brackets (batching, recording). Called once per render pass.
  virtual void begin_frame(std::int64_t /*render_time_us*/) {}
  virtual void end_frame() {}
};

}  // namespace bustle::client
