// Helpers shared by the World's source files (world.cpp, phases/, commands/);
// not part of the core's interface.
#pragma once

#include <string>
#include <utility>

#include "bustle/core/command.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

// std::visit over a set of lambdas.
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// A command's refusal: nothing changed; `message` is the text its sender sees.
inline void reject(CommandResult& r, RejectReason reason, std::string message) {
  r.status = CommandStatus::Rejected;
  r.reason = reason;
  r.message = std::move(message);
}

inline void accept(CommandResult& r) {
  r.status = CommandStatus::Accepted;
}

// "entity <index>:<generation>", as command messages name an id.
inline std::string entity_text(EntityId id) {
  return "entity " + std::to_string(id.index) + ":" + std::to_string(id.generation);
}

// The pedestrian row of `id` when it is alive and walking (on a lane), else
// PedestrianStore::kNoSlot: dormant residents, fading entities, vehicles and
// unknown or stale ids (an id read from a checkpoint may be out of range).
inline std::uint32_t walking_slot(const EntityRegistry& registry, const PedestrianStore& peds,
                                  EntityId id) {
  if (!registry.is_alive(id) || id.index >= peds.dense_of.size()) return PedestrianStore::kNoSlot;
  return peds.dense_of[id.index];
}

// walking_slot for a command that needs a walking pedestrian: on kNoSlot, `r`
// is the refusal ("<entity> is not a walking pedestrian (<detail>)"; a vehicle
// is an invalid argument, anything else an unknown entity).
inline std::uint32_t walking_slot_or_reject(const EntityRegistry& registry,
                                            const PedestrianStore& peds, bool is_vehicle,
                                            EntityId id, const char* detail, CommandResult& r) {
  const std::uint32_t slot = walking_slot(registry, peds, id);
  if (slot == PedestrianStore::kNoSlot) {
    reject(r, is_vehicle ? RejectReason::InvalidArgument : RejectReason::UnknownEntity,
           entity_text(id) + " is not a walking pedestrian (" + detail + ")");
  }
  return slot;
}

}  // namespace bustle::core
