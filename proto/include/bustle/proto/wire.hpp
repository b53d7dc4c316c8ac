// The one place that includes FlatBuffers-generated wire types. Everything else
// (server/net, clients/cpp, tools) includes this header, never the generated
// ones, so a schema change shows up as a change to the proto library.
#pragma once

#include <flatbuffers/flatbuffers.h>

// clang-format off: verifier_alignment.hpp must come before the generated
// headers (it changes how their Verify functions check vectors of 8-byte
// elements), whatever include sorting would make of the order.
#include "bustle/proto/verifier_alignment.hpp"
#include "client_generated.h"  // IWYU pragma: export
#include "common_generated.h"  // IWYU pragma: export
#include "server_generated.h"  // IWYU pragma: export
// clang-format on

namespace bustle::proto {

static_assert(sizeof(bustle::wire::Vec2d) == 16 && alignof(bustle::wire::Vec2d) == 8,
              "verifier_alignment.hpp verifies Vec2d vectors as 16-byte, 8-aligned elements");

inline constexpr std::uint16_t kProtocolVersion =
    static_cast<std::uint16_t>(bustle::wire::Protocol::Version);

}  // namespace bustle::proto
