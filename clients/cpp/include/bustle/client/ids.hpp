// Identity types of the client SDK.
//
// EntityId is the server's identity handle (index + generation); it is stable
// for the entity's life and never an array index on this side. SlotId is a
// local, dense handle the EntityMirror assigns so that rendering backends can
// keep per-entity state in arrays; a slot is reused only after its entity left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "bustle/proto/wire.hpp"

namespace bustle::client {

struct EntityId {
  std::uint32_t index = 0;
  std::uint32_t generation = 0;

  friend constexpr bool operator==(const EntityId&, const EntityId&) = default;

  static EntityId from_wire(const bustle::wire::EntityId& w) {
    return EntityId{w.index(), w.generation()};
  }
  bustle::wire::EntityId to_wire() const { return bustle::wire::EntityId(index, generation); }
};

// "index:generation", the one text form of an entity id on the client side
// (the server's is core::id_text, the Python client's bustle_client.id_text):
// what the CLI prints and takes, and what the SDK's messages name.
inline std::string id_text(EntityId id) {
  return std::to_string(id.index) + ":" + std::to_string(id.generation);
}

struct SlotId {
  static constexpr std::uint32_t kInvalidValue = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t value = kInvalidValue;

  constexpr bool valid() const { return value != kInvalidValue; }
  friend constexpr bool operator==(const SlotId&, const SlotId&) = default;
};

}  // namespace bustle::client

template <>
struct std::hash<bustle::client::EntityId> {
  std::size_t operator()(const bustle::client::EntityId& id) const noexcept {
    return std::hash<std::uint64_t>{}((std::uint64_t{id.generation} << 32) | id.index);
  }
};
