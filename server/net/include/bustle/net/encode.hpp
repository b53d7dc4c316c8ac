// Server->client message encoding (everything but Delta, see delta_tracker.hpp).
//
// Each function Clear()s `fbb` and leaves a finished "BSV1" ServerFrame in it
// that passes proto::verify_server_frame. Optional parts of a CommandResult
// (stats, job, reports, spawn fields) are written only when present, so a
// client can tell "not part of this answer" from "empty".
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>

#include "bustle/net/command_queue.hpp"
#include "bustle/net/server.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::net {

void encode_error(wire::ErrorCode code, const std::string& message,
                  flatbuffers::FlatBufferBuilder& fbb);
void encode_welcome(const WelcomeInfo& welcome, std::uint32_t session_id, Role role,
                    std::uint64_t current_step, flatbuffers::FlatBufferBuilder& fbb);
void encode_command_result(const OutboundResult& result, flatbuffers::FlatBufferBuilder& fbb);
void encode_job_update(const JobInfo& job, flatbuffers::FlatBufferBuilder& fbb);
void encode_spawn_update(const SpawnReport& spawn, flatbuffers::FlatBufferBuilder& fbb);

}  // namespace bustle::net
