// bustle --json: the replies as JSON objects with stable keys (docs/cli.md,
// "JSON output"). Keys are the reply fields' names (snake_case); ids are
// "INDEX:GEN" strings, digests 16 hex digits (a 64-bit value does not fit a
// JSON number exactly), enums their wire names, times in the unit the key
// names (_us, _ms, _s).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "bustle/client/replies.hpp"

namespace bustle::cli::json {

using Json = nlohmann::ordered_json;

std::string hex(std::uint64_t value);

Json stats(const client::StatsInfo& s);
Json job(const client::JobInfo& j);
Json snapshot(const client::SnapshotEntry& e);
Json garage(const client::GarageReport& g);
Json signal(const client::SignalReport& s);
Json zone(const client::ZoneReport& z);
Json vehicle(const client::VehicleReport& v);
Json entity(const client::EntityReport& e);
Json population(const client::PopulationReport& p);
Json spawn(const client::SpawnStatusInfo& s);

// Writes `value` as one line and flushes (a stream of lines stays parseable
// line by line).
void print(std::FILE* out, const Json& value);

}  // namespace bustle::cli::json
