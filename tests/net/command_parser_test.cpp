// parse_command: wire Command -> core command or graded rejection, role checks,
// and the structural checks the schema cannot express. Every frame goes
// through proto::verify_client_frame first, exactly as the server does it, so
// these cases also pin the verifier's table budget for the largest commands.
#include "bustle/net/command_parser.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "bustle/proto/framing.hpp"

using namespace bustle;
using net::ParsedCommand;
using net::Role;

namespace {

using Body = std::function<std::pair<wire::CommandBody, flatbuffers::Offset<void>>(
    flatbuffers::FlatBufferBuilder&)>;

// Builds ClientFrame{Command{request_id 7, body}}, verifies it like the
// server, parses it for `role`.
struct Parsed {
  std::vector<std::uint8_t> bytes;
  bool verified = false;
  std::string verify_error;
  ParsedCommand parsed;
};

Parsed parse(const Body& body, Role role = Role::Operator) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto [type, offset] = body(fbb);
  const auto cmd = wire::CreateCommand(fbb, 7, type, offset);
  fbb.Finish(wire::CreateClientFrame(fbb, wire::ClientMessage::Command, cmd.Union()),
             wire::ClientFrameIdentifier());
  Parsed out;
  out.bytes.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  const wire::ClientFrame* frame = proto::verify_client_frame(out.bytes, out.verify_error);
  out.verified = frame != nullptr;
  if (frame != nullptr) out.parsed = net::parse_command(*frame->message_as_Command(), role);
  return out;
}

template <class T>
const T& world_command(const ParsedCommand& p) {
  REQUIRE(p.ok());
  const auto* w = std::get_if<core::WorldCommand>(&p.body);
  REQUIRE(w != nullptr);
  const T* c = std::get_if<T>(w);
  REQUIRE(c != nullptr);
  return *c;
}

const net::ControlCommand& control_command(const ParsedCommand& p) {
  REQUIRE(p.ok());
  const auto* c = std::get_if<net::ControlCommand>(&p.body);
  REQUIRE(c != nullptr);
  return *c;
}

Body spawn_body(wire::PriorityClass priority, const char* zone = "market",
                const char* lane = nullptr, std::uint32_t timeout_ms = 0) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const auto s = wire::CreateSpawnPedestrianDirect(fbb, zone, lane, priority, timeout_ms);
    return std::make_pair(wire::CommandBody::SpawnPedestrian, s.Union());
  };
}

// A SpawnPedestrian with a route of `lanes` lane ids ("l0", "l1", ...), top
// level or (`in_batch`) as the one Spawn op of a lifecycle batch.
Body route_body(std::size_t lanes, bool in_batch = false) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < lanes; ++i) ids.push_back("l" + std::to_string(i));
    const auto route = fbb.CreateVectorOfStrings(ids);
    const auto s = wire::CreateSpawnPedestrian(fbb, 0, 0, wire::PriorityClass::Quest, 0, route);
    if (!in_batch) return std::make_pair(wire::CommandBody::SpawnPedestrian, s.Union());
    const std::vector<flatbuffers::Offset<wire::LifecycleOp>> ops{
        wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Spawn, s)};
    return std::make_pair(wire::CommandBody::LifecycleBatch,
                          wire::CreateLifecycleBatchDirect(fbb, &ops).Union());
  };
}

// ops: 'S' spawn (with its table), 's' spawn without table, 'D' despawn with
// id, 'd' despawn without id, 'X' unknown kind.
Body batch_body(const std::string& ops,
                wire::PriorityClass priority = wire::PriorityClass::Background) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    std::vector<flatbuffers::Offset<wire::LifecycleOp>> items;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const wire::EntityId id(static_cast<std::uint32_t>(i), 1);
      switch (ops[i]) {
        case 'S': {
          const auto s = wire::CreateSpawnPedestrianDirect(fbb, nullptr, nullptr, priority, 0);
          items.push_back(wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Spawn, s));
          break;
        }
        case 's':
          items.push_back(wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Spawn));
          break;
        case 'D':
          items.push_back(wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Despawn, 0, &id));
          break;
        case 'd':
          items.push_back(wire::CreateLifecycleOp(fbb, wire::LifecycleOpKind::Despawn));
          break;
        default:
          items.push_back(
              wire::CreateLifecycleOp(fbb, static_cast<wire::LifecycleOpKind>(9), 0, &id));
          break;
      }
    }
    const auto b = wire::CreateLifecycleBatchDirect(fbb, &items);
    return std::make_pair(wire::CommandBody::LifecycleBatch, b.Union());
  };
}

Body observers_body(std::size_t points, std::optional<std::size_t> views) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    std::vector<wire::Vec2> pts;
    for (std::size_t i = 0; i < points; ++i) pts.emplace_back(static_cast<float>(i), 2.0f);
    std::vector<flatbuffers::Offset<wire::ObserverView>> vs;
    if (views) {
      for (std::size_t i = 0; i < *views; ++i) {
        vs.push_back(wire::CreateObserverView(fbb, 10.0 + static_cast<double>(i), i % 2 == 0, 0.5));
      }
    }
    const auto o = wire::CreateSetObserversDirect(fbb, &pts, views ? &vs : nullptr);
    return std::make_pair(wire::CommandBody::SetObservers, o.Union());
  };
}

Body entity_body(wire::CommandBody type, bool with_id) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const wire::EntityId id(4, 2);
    flatbuffers::Offset<void> off;
    if (!with_id) {
      // The generated builders assert on a missing required field: build the
      // empty table by hand, as a broken client would send it.
      off = flatbuffers::Offset<void>(fbb.EndTable(fbb.StartTable()));
    } else if (type == wire::CommandBody::ReportAttached) {
      off = wire::CreateReportAttached(fbb, &id).Union();
    } else {
      off = wire::CreateQueryEntity(fbb, &id).Union();
    }
    return std::make_pair(type, off);
  };
}

Body empty_body(wire::CommandBody type) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    flatbuffers::Offset<void> off;
    switch (type) {
      case wire::CommandBody::QueryPopulation:
        off = wire::CreateQueryPopulation(fbb).Union();
        break;
      case wire::CommandBody::QuerySpawn:
        off = wire::CreateQuerySpawn(fbb, 42).Union();
        break;
      case wire::CommandBody::CancelSpawn:
        off = wire::CreateCancelSpawn(fbb, 42).Union();
        break;
      case wire::CommandBody::SetLifecycle:
        off = wire::CreateSetLifecycle(fbb, 5, 6, 500, 7).Union();
        break;
      default:
        FAIL("empty_body: unsupported type");
    }
    return std::make_pair(type, off);
  };
}

}  // namespace

TEST_CASE("SpawnPedestrian becomes a core spawn request with every field") {
  const Parsed p = parse(spawn_body(wire::PriorityClass::Story, "market", "sw3", 1500));
  REQUIRE(p.verified);
  const auto& s = world_command<core::SpawnPedestrian>(p.parsed);
  CHECK(s.zone == "market");
  CHECK(s.lane == "sw3");
  CHECK(s.priority == 0);
  CHECK(s.timeout_ms == 1500);

  // Absent fields: any zone and lane, the schema's default priority (Quest).
  const Parsed d = parse([](flatbuffers::FlatBufferBuilder& fbb) {
    return std::make_pair(wire::CommandBody::SpawnPedestrian,
                          wire::CreateSpawnPedestrian(fbb).Union());
  });
  const auto& ds = world_command<core::SpawnPedestrian>(d.parsed);
  CHECK(ds.zone.empty());
  CHECK(ds.lane.empty());
  CHECK(ds.priority == 1);
  CHECK(ds.timeout_ms == 0);
  CHECK(ds.route.empty());
}

TEST_CASE("SpawnPedestrian routes keep their lanes in order, at most 256") {
  SECTION("lanes are passed on as given; the core judges the ids") {
    const Parsed p = parse([](flatbuffers::FlatBufferBuilder& fbb) {
      const auto route = fbb.CreateVectorOfStrings(
          std::vector<std::string>{"x.facilities.market", "market.loop", "market.loop", ""});
      const auto zone = fbb.CreateString("facilities");
      const auto s =
          wire::CreateSpawnPedestrian(fbb, zone, 0, wire::PriorityClass::Story, 0, route);
      return std::make_pair(wire::CommandBody::SpawnPedestrian, s.Union());
    });
    const auto& s = world_command<core::SpawnPedestrian>(p.parsed);
    CHECK(s.route ==
          std::vector<std::string>{"x.facilities.market", "market.loop", "market.loop", ""});
    CHECK(s.zone == "facilities");
    CHECK(s.lane.empty());
    CHECK(s.priority == 0);
  }
  SECTION("an empty route vector is no route") {
    CHECK(world_command<core::SpawnPedestrian>(parse(route_body(0)).parsed).route.empty());
  }
  SECTION("256 lanes are the limit, at top level and in a batch") {
    const Parsed p = parse(route_body(256));
    INFO(p.verify_error);
    REQUIRE(p.verified);
    const auto& s = world_command<core::SpawnPedestrian>(p.parsed);
    REQUIRE(s.route.size() == 256);
    CHECK(s.route.front() == "l0");
    CHECK(s.route.back() == "l255");
    const Parsed b = parse(route_body(256, true));
    CHECK(world_command<core::LifecycleBatch>(b.parsed).ops.at(0).spawn.route.size() == 256);
  }
  SECTION("257 lanes are rejected naming the field, not truncated") {
    const Parsed p = parse(route_body(257));
    REQUIRE(p.verified);
    CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(p.parsed.message == "route: 257 lanes, at most 256 per spawn");
    const Parsed b = parse(route_body(4000, true));
    REQUIRE(b.verified);  // strings do not count against the table budget
    CHECK(b.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(b.parsed.message == "ops[0].spawn.route: 4000 lanes, at most 256 per spawn");
  }
}

TEST_CASE("an unknown PriorityClass value is rejected naming the field") {
  const Parsed p = parse(spawn_body(static_cast<wire::PriorityClass>(4)));
  REQUIRE(p.verified);  // the verifier does not check enum values
  CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
  CHECK_THAT(p.parsed.message,
             Catch::Contains("priority") && Catch::Contains("unknown PriorityClass value 4"));

  const Parsed b = parse(batch_body("SS", static_cast<wire::PriorityClass>(200)));
  CHECK(b.parsed.reason == core::RejectReason::InvalidArgument);
  CHECK_THAT(b.parsed.message, Catch::StartsWith("ops[0].spawn.priority"));
}

TEST_CASE("SetObservers views must match the points one to one") {
  SECTION("no views: flat ground, no view direction") {
    const Parsed p = parse(observers_body(3, std::nullopt));
    const auto& obs = world_command<core::SetObservers>(p.parsed);
    REQUIRE(obs.points.size() == 3);
    CHECK(obs.points[2].x_m == 2.0);
    CHECK(obs.points[2].y_m == 2.0);
    CHECK(obs.points[2].z_m == 0.0);
    CHECK_FALSE(obs.points[2].has_heading);
  }
  SECTION("one view per point") {
    const Parsed p = parse(observers_body(2, 2));
    const auto& obs = world_command<core::SetObservers>(p.parsed);
    REQUIRE(obs.points.size() == 2);
    CHECK(obs.points[0].z_m == 10.0);
    CHECK(obs.points[0].has_heading);
    CHECK(obs.points[0].heading_rad == 0.5);
    CHECK(obs.points[1].z_m == 11.0);
    CHECK_FALSE(obs.points[1].has_heading);
  }
  SECTION("a length mismatch is rejected with a clear message") {
    const Parsed p = parse(observers_body(2, 3));
    CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(p.parsed.message ==
          "views: 3 entries for 2 points (send one view per point, or no views)");
    const Parsed q = parse(observers_body(2, 0));
    CHECK(q.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK_THAT(q.parsed.message, Catch::StartsWith("views: 0 entries for 2 points"));
  }
  SECTION("64 observers with views pass the verifier's table budget") {
    const Parsed p = parse(observers_body(64, 64));
    INFO(p.verify_error);
    REQUIRE(p.verified);
    CHECK(world_command<core::SetObservers>(p.parsed).points.size() == 64);
  }
}

TEST_CASE("LifecycleBatch is validated structurally before anything is queued") {
  SECTION("spawn and despawn ops keep their order") {
    const Parsed p = parse(batch_body("SDS"));
    const auto& b = world_command<core::LifecycleBatch>(p.parsed);
    REQUIRE(b.ops.size() == 3);
    CHECK(b.ops[0].kind == core::LifecycleOp::Kind::Spawn);
    CHECK(b.ops[0].spawn.priority == 3);
    CHECK(b.ops[1].kind == core::LifecycleOp::Kind::Despawn);
    CHECK(b.ops[1].id == core::EntityId{1, 1});
    CHECK(b.ops[2].kind == core::LifecycleOp::Kind::Spawn);
  }
  SECTION("256 spawn ops are the limit and pass the verifier") {
    const Parsed p = parse(batch_body(std::string(256, 'S')));
    INFO(p.verify_error);
    REQUIRE(p.verified);
    CHECK(world_command<core::LifecycleBatch>(p.parsed).ops.size() == 256);
  }
  SECTION("257 ops are rejected, not truncated") {
    const Parsed p = parse(batch_body(std::string(257, 'S')));
    INFO(p.verify_error);
    REQUIRE(p.verified);
    CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(p.parsed.message == "ops: 257 operations, at most 256 per batch (nothing was applied)");
  }
  SECTION("a Spawn op needs its spawn table, a Despawn op its id") {
    const Parsed s = parse(batch_body("Ss"));
    CHECK(s.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(s.parsed.message == "ops[1].spawn is required for a Spawn op");
    const Parsed d = parse(batch_body("SDd"));
    CHECK(d.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK(d.parsed.message == "ops[2].id is required for a Despawn op");
  }
  SECTION("an unknown op kind is rejected") {
    const Parsed p = parse(batch_body("DX"));
    CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
    CHECK_THAT(p.parsed.message, Catch::StartsWith("ops[1].kind: unknown LifecycleOpKind value 9"));
  }
  SECTION("an empty batch is left to the core") {
    const Parsed p = parse(batch_body(""));
    CHECK(world_command<core::LifecycleBatch>(p.parsed).ops.empty());
  }
}

TEST_CASE("spawn handle commands, lifecycle settings and the new queries map to their fields") {
  CHECK(world_command<core::CancelSpawn>(parse(empty_body(wire::CommandBody::CancelSpawn)).parsed)
            .handle == 42);
  const auto l =
      world_command<core::SetLifecycle>(parse(empty_body(wire::CommandBody::SetLifecycle)).parsed);
  CHECK(l.growth_quota == 5);
  CHECK(l.recycle_quota == 6);
  CHECK(l.interval_ms == 500);
  CHECK(l.migration_budget == 7);
  // ReportAttached is the representation axis: a control command of the sim
  // driver, not a world command (it never reaches the World or its digest).
  const auto ra =
      control_command(parse(entity_body(wire::CommandBody::ReportAttached, true)).parsed);
  CHECK(ra.kind == net::ControlCommand::Kind::ReportAttached);
  CHECK(ra.entity == core::EntityId{4, 2});

  const auto qe = control_command(parse(entity_body(wire::CommandBody::QueryEntity, true)).parsed);
  CHECK(qe.kind == net::ControlCommand::Kind::QueryEntity);
  CHECK(qe.entity == core::EntityId{4, 2});
  CHECK(control_command(parse(empty_body(wire::CommandBody::QueryPopulation)).parsed).kind ==
        net::ControlCommand::Kind::QueryPopulation);
  const auto qs = control_command(parse(empty_body(wire::CommandBody::QuerySpawn)).parsed);
  CHECK(qs.kind == net::ControlCommand::Kind::QuerySpawn);
  CHECK(qs.spawn_handle == 42);
}

TEST_CASE("a missing required entity id fails verification before parsing") {
  // (required) in the schema: the verifier refuses the frame, so the server
  // closes the connection as MalformedFrame; parse_command's own "id is
  // required" answer only guards against a verifier without that check.
  for (const auto type : {wire::CommandBody::ReportAttached, wire::CommandBody::QueryEntity}) {
    const Parsed p = parse(entity_body(type, false));
    CHECK_FALSE(p.verified);
  }
}

TEST_CASE("viewers may query and report attachment but not change the world") {
  const Parsed spawn = parse(spawn_body(wire::PriorityClass::Quest), Role::Viewer);
  CHECK(spawn.parsed.reason == core::RejectReason::NotAuthorized);
  CHECK(spawn.parsed.message == "SpawnPedestrian requires the operator role");
  CHECK(parse(batch_body("S"), Role::Viewer).parsed.reason == core::RejectReason::NotAuthorized);
  CHECK(parse(empty_body(wire::CommandBody::CancelSpawn), Role::Viewer).parsed.reason ==
        core::RejectReason::NotAuthorized);
  CHECK(parse(empty_body(wire::CommandBody::SetLifecycle), Role::Viewer).parsed.reason ==
        core::RejectReason::NotAuthorized);
  CHECK(parse(observers_body(1, 1), Role::Viewer).parsed.reason ==
        core::RejectReason::NotAuthorized);

  CHECK(parse(entity_body(wire::CommandBody::ReportAttached, true), Role::Viewer).parsed.ok());
  CHECK(parse(entity_body(wire::CommandBody::QueryEntity, true), Role::Viewer).parsed.ok());
  CHECK(parse(empty_body(wire::CommandBody::QueryPopulation), Role::Viewer).parsed.ok());
  CHECK(parse(empty_body(wire::CommandBody::QuerySpawn), Role::Viewer).parsed.ok());

  CHECK(net::allowed_for_viewer(wire::CommandBody::QueryStats));
  CHECK_FALSE(net::allowed_for_viewer(wire::CommandBody::Step));
  CHECK_FALSE(net::allowed_for_viewer(wire::CommandBody::ForceFull));
}

TEST_CASE("structural errors are reported before the role") {
  // A viewer's malformed operator command learns what is wrong with it first,
  // as for the existing commands.
  const Parsed p = parse(observers_body(2, 1), Role::Viewer);
  CHECK(p.parsed.reason == core::RejectReason::InvalidArgument);
}

TEST_CASE("a missing body and an unknown body type are graded") {
  const Parsed missing = parse([](flatbuffers::FlatBufferBuilder&) {
    return std::make_pair(wire::CommandBody::QueryPopulation, flatbuffers::Offset<void>(0));
  });
  CHECK(missing.parsed.reason == core::RejectReason::InvalidArgument);
  CHECK(missing.parsed.message == "command body is missing");

  const Parsed unknown = parse([](flatbuffers::FlatBufferBuilder& fbb) {
    return std::make_pair(static_cast<wire::CommandBody>(250), wire::CreateQueryStats(fbb).Union());
  });
  REQUIRE(unknown.verified);
  CHECK(unknown.parsed.reason == core::RejectReason::UnknownCommand);
  CHECK(unknown.parsed.message == "unknown command type 250");
}
