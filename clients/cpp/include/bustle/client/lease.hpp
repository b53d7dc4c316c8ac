// Leases (protocol v2): what this client applied for each entity it
// receives, as SDK types (client.fbs LeaseReport). Its own header so that
// the representation layer and backends need not include the message
// builders.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bustle/client/ids.hpp"
#include "bustle/client/stream.hpp"

namespace bustle::client {

// The server keeps them against its hints (QueryLeases); they never touch
// the simulation.
//   Assigned   a new representation was taken (e.g. an actor from a pool)
//   Preserved  the representation held before is kept
//   Released   the representation was given back (the entity is not drawn)
//   Unassigned the hinted representation could not be applied (reason)
// Same values as the schema's LeaseState / UnassignedReason.
enum class LeaseState : std::uint8_t { Assigned = 0, Unassigned = 1, Released = 2, Preserved = 3 };
enum class UnassignedReason : std::uint8_t {
  None = 0,
  PoolAtCap = 1,
  ClassNotLoaded = 2,
  Loading = 3,
  Other = 4
};
const char* to_string(LeaseState v);
const char* to_string(UnassignedReason v);
struct Lease {
  EntityId id;
  LeaseState state = LeaseState::Assigned;
  RepresentationHint representation = RepresentationHint::Actor;  // applied (Assigned / Preserved)
  UnassignedReason reason = UnassignedReason::None;               // Unassigned
  friend bool operator==(const Lease&, const Lease&) = default;
};
// At most this many leases go into one report (the server's limit).
inline constexpr std::size_t kLeaseEntriesMax = 4096;

}  // namespace bustle::client
