// The one place that includes FlatBuffers-generated wire types. Everything else
// (server/net, clients/cpp, tools) includes this header, never the generated
// ones, so a schema change shows up as a change to the proto library.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "client_generated.h"  // IWYU pragma: export
#include "common_generated.h"  // IWYU pragma: export
#include "server_generated.h"  // IWYU pragma: export

namespace bustle::proto {

inline constexpr std::uint16_t kProtocolVersion =
    static_cast<std::uint16_t>(bustle::wire::Protocol::Version);

}  // namespace bustle::proto
