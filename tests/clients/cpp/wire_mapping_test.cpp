// Every schema field of the generated reply tables reaches the C++ SDK.
//
// The schema is parsed at run time (flatbuffers::Parser, the real
// proto/schema/*.fbs); a CommandResult is written as JSON with every field of
// every reply table the SDK maps through the object API set to a value other
// than its default (field list from the parsed schema), parsed into a
// FlatBuffer, decoded with client::to_command_reply, packed back from the
// SDK's objects, and both rendered as JSON text: a field the SDK drops or
// misreads makes the texts differ, and the failure shows which.
#include <flatbuffers/idl.h>
#include <flatbuffers/util.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bustle/client/replies.hpp"

namespace c = bustle::client;
namespace wire = bustle::wire;

namespace {

std::string json_value(const flatbuffers::Type& type, int seed);

// A JSON object with every field of `sd` set (not to its default).
std::string json_table(const flatbuffers::StructDef& sd, int seed) {
  std::string out = "{";
  int i = 0;
  for (const flatbuffers::FieldDef* f : sd.fields.vec) {
    if (f->deprecated) continue;
    if (f->value.type.base_type == flatbuffers::BASE_TYPE_UTYPE)
      continue;  // unions: none in reply tables
    out += (i == 0 ? "\"" : ",\"") + f->name + "\":" + json_value(f->value.type, seed * 100 + i);
    ++i;
  }
  return out + "}";
}

std::string json_value(const flatbuffers::Type& type, int seed) {
  using flatbuffers::BaseType;
  if (type.enum_def != nullptr && type.base_type != flatbuffers::BASE_TYPE_VECTOR) {
    const auto& vals = type.enum_def->Vals();
    return "\"" + vals.back()->name + "\"";  // the last value: never the 0 default of these enums
  }
  switch (type.base_type) {
    case flatbuffers::BASE_TYPE_BOOL:
      return "true";
    case flatbuffers::BASE_TYPE_FLOAT:
    case flatbuffers::BASE_TYPE_DOUBLE:
      return std::to_string(seed % 200 + 1) + ".5";
    case flatbuffers::BASE_TYPE_STRING:
      return "\"s" + std::to_string(seed) + "\"";
    case flatbuffers::BASE_TYPE_STRUCT:
      return json_table(*type.struct_def, seed);
    case flatbuffers::BASE_TYPE_VECTOR: {
      const flatbuffers::Type item = type.VectorType();
      return "[" + json_value(item, seed) + "," + json_value(item, seed + 1) + "]";
    }
    default:  // integers: small enough for every width in the schema, never 0
      return std::to_string(seed % 100 + 1);
  }
}

struct Fixture {
  flatbuffers::Parser parser;
  std::string frame_json;
  Fixture() {
    const std::string dir = std::string(BUSTLE_SOURCE_DIR) + "/proto/schema/";
    std::string schema;
    REQUIRE(flatbuffers::LoadFile((dir + "server.fbs").c_str(), false, &schema));
    const char* include_paths[] = {dir.c_str(), nullptr};
    REQUIRE(parser.Parse(schema.c_str(), include_paths, (dir + "server.fbs").c_str()));
  }
  const flatbuffers::StructDef& table(const char* name) const {
    const flatbuffers::StructDef* sd = parser.LookupStruct(std::string("bustle.wire.") + name);
    REQUIRE(sd != nullptr);
    return *sd;
  }
  std::string text(const void* table, const char* name) const {
    std::string out;
    REQUIRE(flatbuffers::GenerateTextFromTable(parser, table, std::string("bustle.wire.") + name,
                                               &out));
    return out;
  }
};

// The SDK's object `o` of table `T`, packed again and rendered as text.
template <class T, class Obj>
std::string repacked_text(const Fixture& fx, const Obj& o, const char* name) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(T::Pack(fbb, &o));
  return fx.text(flatbuffers::GetRoot<T>(fbb.GetBufferPointer()), name);
}

// A vector reply (one row was sent): present, one row, every field kept.
template <class T, class Rows>
void check_rows(const Fixture& fx, const Rows& rows,
                const flatbuffers::Vector<flatbuffers::Offset<T>>* sent, const char* name) {
  INFO(name);
  REQUIRE(rows.has_value());
  REQUIRE(sent != nullptr);
  REQUIRE(rows->size() == 1);
  CHECK(repacked_text<T>(fx, rows->front(), name) == fx.text(sent->Get(0), name));
}

}  // namespace

TEST_CASE("every schema field of the generated reply tables survives the SDK decode",
          "[wire][mapping]") {
  Fixture fx;
  const char* reply_fields[][2] = {{"stats", "Stats"},        {"snapshots", "SnapshotInfo"},
                                   {"garages", "GarageInfo"}, {"signals", "SignalInfo"},
                                   {"zones", "ZoneInfo"},     {"population", "PopulationInfo"},
                                   {"leases", "LeaseSummary"}};
  std::string message = "{";
  for (std::size_t i = 0; i < std::size(reply_fields); ++i) {
    const std::string obj = json_table(fx.table(reply_fields[i][1]), static_cast<int>(i) + 1);
    const bool vector = std::string(reply_fields[i][0]) != "stats" &&
                        std::string(reply_fields[i][0]) != "population" &&
                        std::string(reply_fields[i][0]) != "leases";
    message += (i == 0 ? "\"" : ",\"") + std::string(reply_fields[i][0]) +
               "\":" + (vector ? "[" + obj + "]" : obj);
  }
  message += "}";
  REQUIRE(fx.parser.SetRootType("ServerFrame"));
  REQUIRE(fx.parser.Parse(
      ("{\"message_type\":\"CommandResult\",\"message\":" + message + "}").c_str()));
  const auto* frame =
      flatbuffers::GetRoot<wire::ServerFrame>(fx.parser.builder_.GetBufferPointer());
  const wire::CommandResult* cr = frame->message_as_CommandResult();
  REQUIRE(cr != nullptr);
  const c::CommandReply reply = c::to_command_reply(*cr);

  REQUIRE(reply.stats.has_value());
  const std::string stats_text = fx.text(cr->stats(), "Stats");
  CHECK(stats_text.find("step_time_p99_us") !=
        std::string::npos);  // every field was set (non-default)
  CHECK(repacked_text<wire::Stats>(fx, *reply.stats, "Stats") == stats_text);
  REQUIRE(reply.population.has_value());
  CHECK(repacked_text<wire::PopulationInfo>(fx, *reply.population, "PopulationInfo") ==
        fx.text(cr->population(), "PopulationInfo"));
  REQUIRE(reply.leases.has_value());
  CHECK(repacked_text<wire::LeaseSummary>(fx, *reply.leases, "LeaseSummary") ==
        fx.text(cr->leases(), "LeaseSummary"));
  check_rows<wire::SnapshotInfo>(fx, reply.snapshots, cr->snapshots(), "SnapshotInfo");
  check_rows<wire::GarageInfo>(fx, reply.garages, cr->garages(), "GarageInfo");
  check_rows<wire::SignalInfo>(fx, reply.signals, cr->signals(), "SignalInfo");
  check_rows<wire::ZoneInfo>(fx, reply.zones, cr->zones(), "ZoneInfo");
}
