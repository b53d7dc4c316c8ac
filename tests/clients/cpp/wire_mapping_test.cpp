// Every schema field of the reply tables reaches the C++ SDK.
//
// The schema is parsed at run time (flatbuffers::Parser, the real
// proto/fbs/*.fbs); a CommandResult is written as JSON with every one of
// its fields set, and every field of every table it carries set to a value
// other than its default (field lists from the parsed schema), parsed into a
// FlatBuffer, decoded with client::to_command_reply, packed back from the
// SDK's objects (generated types, or SDK types derived from them), and both
// rendered as JSON text: a field the SDK drops or misreads makes the texts
// differ, and the failure shows which. A CommandResult field with no check
// below fails too, so a field added to the schema cannot be forgotten in
// CommandReply. The Welcome's garages, signals and chains the same way.
#include <flatbuffers/idl.h>
#include <flatbuffers/util.h>

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bustle/client/replies.hpp"
#include "bustle/client/stream.hpp"

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
    const std::string dir = std::string(BUSTLE_SOURCE_DIR) + "/proto/fbs/";
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

// A vector reply: present, as many rows as were sent, every field kept.
template <class T, class Rows>
void check_rows(const Fixture& fx, const Rows& rows,
                const flatbuffers::Vector<flatbuffers::Offset<T>>* sent, const char* name) {
  INFO(name);
  REQUIRE(sent != nullptr);
  REQUIRE(rows.size() == sent->size());
  for (flatbuffers::uoffset_t k = 0; k < sent->size(); ++k) {
    CHECK(repacked_text<T>(fx, rows[k], name) == fx.text(sent->Get(k), name));
  }
}

template <class T, class Obj>
void check_one(const Fixture& fx, const std::optional<Obj>& got, const T* sent, const char* name) {
  INFO(name);
  REQUIRE(sent != nullptr);
  REQUIRE(got.has_value());
  CHECK(repacked_text<T>(fx, *got, name) == fx.text(sent, name));
}

// One check per CommandResult field, by schema name.
using Check =
    std::function<void(const Fixture&, const c::CommandReply&, const wire::CommandResult&)>;

// A table part: CommandReply::*member against CommandResult::*sent().
template <class T, class Obj>
Check one_check(std::optional<Obj> c::CommandReply::*member,
                const T* (wire::CommandResult::*sent)() const, const char* name) {
  return [=](const Fixture& fx, const c::CommandReply& r, const wire::CommandResult& w) {
    check_one(fx, r.*member, (w.*sent)(), name);
  };
}

// A vector part: present, every row.
template <class T, class Row>
Check rows_check(std::optional<std::vector<Row>> c::CommandReply::*member,
                 const flatbuffers::Vector<flatbuffers::Offset<T>>* (wire::CommandResult::*sent)()
                     const,
                 const char* name) {
  return [=](const Fixture& fx, const c::CommandReply& r, const wire::CommandResult& w) {
    REQUIRE((r.*member).has_value());
    check_rows(fx, *(r.*member), (w.*sent)(), name);
  };
}
std::map<std::string, Check> reply_checks() {
  using R = const c::CommandReply&;
  using W = const wire::CommandResult&;
  using F = const Fixture&;
  std::map<std::string, Check> m;
  m["request_id"] = [](F, R r, W w) { CHECK(r.request_id == w.request_id()); };
  m["status"] = [](F, R r, W w) { CHECK(r.status == w.status()); };
  m["reason"] = [](F, R r, W w) { CHECK(r.reason == w.reason()); };
  m["message"] = [](F, R r, W w) { CHECK(r.message == w.message()->str()); };
  m["applied_step"] = [](F, R r, W w) { CHECK(r.applied_step == w.applied_step()); };
  m["stats"] = one_check(&c::CommandReply::stats, &wire::CommandResult::stats, "Stats");
  m["job"] = one_check(&c::CommandReply::job, &wire::CommandResult::job, "JobStatus");
  m["snapshots"] =
      rows_check(&c::CommandReply::snapshots, &wire::CommandResult::snapshots, "SnapshotInfo");
  m["garages"] = rows_check(&c::CommandReply::garages, &wire::CommandResult::garages, "GarageInfo");
  m["signals"] = rows_check(&c::CommandReply::signals, &wire::CommandResult::signals, "SignalInfo");
  m["zones"] = rows_check(&c::CommandReply::zones, &wire::CommandResult::zones, "ZoneInfo");
  m["vehicle"] = one_check(&c::CommandReply::vehicle, &wire::CommandResult::vehicle, "VehicleInfo");
  m["handle"] = [](F, R r, W w) { CHECK(r.handle == w.handle()); };
  m["entity"] = [](F, R r, W w) {
    REQUIRE(r.entity.has_value());
    CHECK(*r.entity == c::EntityId::from_wire(*w.entity()));
  };
  m["batch"] = [](F, R r, W w) { CHECK(r.batch == w.batch()); };
  m["handles"] = [](F, R r, W w) {
    CHECK(r.handles == std::vector<std::uint64_t>(w.handles()->begin(), w.handles()->end()));
  };
  m["entity_info"] =
      one_check(&c::CommandReply::entity_info, &wire::CommandResult::entity_info, "EntityInfo");
  m["population"] =
      one_check(&c::CommandReply::population, &wire::CommandResult::population, "PopulationInfo");
  m["spawn"] = one_check(&c::CommandReply::spawn, &wire::CommandResult::spawn, "SpawnStatus");
  m["leases"] = one_check(&c::CommandReply::leases, &wire::CommandResult::leases, "LeaseSummary");
  m["enqueue_ordinal"] = [](F, R r, W w) {
    REQUIRE(r.enqueue_ordinal.has_value());
    CHECK(*r.enqueue_ordinal == w.enqueue_ordinal());
  };
  return m;
}

const wire::ServerFrame* parse_frame(Fixture& fx, const std::string& type,
                                     const std::string& message) {
  REQUIRE(fx.parser.SetRootType("ServerFrame"));
  REQUIRE(
      fx.parser.Parse(("{\"message_type\":\"" + type + "\",\"message\":" + message + "}").c_str()));
  return flatbuffers::GetRoot<wire::ServerFrame>(fx.parser.builder_.GetBufferPointer());
}

}  // namespace

TEST_CASE("every schema field of every reply table survives the SDK decode", "[wire][mapping]") {
  Fixture fx;
  const flatbuffers::StructDef& result = fx.table("CommandResult");
  const wire::CommandResult* cr =
      parse_frame(fx, "CommandResult", json_table(result, 1))->message_as_CommandResult();
  REQUIRE(cr != nullptr);
  const c::CommandReply reply = c::to_command_reply(*cr);
  CHECK(fx.text(cr->stats(), "Stats").find("step_time_p99_us") !=
        std::string::npos);  // set (non-default)
  const std::map<std::string, Check> checks = reply_checks();
  for (const flatbuffers::FieldDef* f : result.fields.vec) {
    INFO("CommandResult." << f->name);
    const auto check = checks.find(f->name);
    REQUIRE(check !=
            checks.end());  // a new CommandResult field: map it in CommandReply and check it here
    check->second(fx, reply, *cr);
  }
}

TEST_CASE("every schema field of the Welcome garages, signals and chains survives the SDK decode",
          "[wire][mapping]") {
  Fixture fx;
  const std::string message = "{\"garages\":[" + json_table(fx.table("GarageGeometry"), 1) +
                              "],\"signals\":[" + json_table(fx.table("SignalGeometry"), 2) +
                              "],\"chains\":[" + json_table(fx.table("LaneChainInfo"), 3) + "]}";
  const wire::Welcome* w = parse_frame(fx, "Welcome", message)->message_as_Welcome();
  REQUIRE(w != nullptr);
  const c::WelcomeInfo info = c::to_welcome_info(*w);
  check_rows(fx, info.garages, w->garages(), "GarageGeometry");
  check_rows(fx, info.signals, w->signals(), "SignalGeometry");
  check_rows(fx, info.chains, w->chains(), "LaneChainInfo");
}

TEST_CASE("the SDK helpers read the schema's none defaults", "[wire][mapping]") {
  Fixture fx;
  const wire::CommandResult* cr =
      parse_frame(fx, "CommandResult", R"({"spawn":{"handle":3},"entity_info":{"lane":0}})")
          ->message_as_CommandResult();
  REQUIRE(cr != nullptr);
  const c::CommandReply reply = c::to_command_reply(*cr);
  REQUIRE(reply.spawn.has_value());
  CHECK_FALSE(reply.spawn->lane_index().has_value());
  CHECK(reply.spawn->entity_id() == c::EntityId{});
  REQUIRE(reply.entity_info.has_value());
  CHECK(reply.entity_info->lane_index() == std::optional<std::uint32_t>(0));
  CHECK_FALSE(reply.entity_info->work_slot_index().has_value());
  CHECK_FALSE(reply.stats.has_value());
  CHECK_FALSE(reply.snapshots.has_value());
  CHECK_FALSE(reply.entity.has_value());
  CHECK_FALSE(reply.enqueue_ordinal.has_value());  // the schema default: none
}
