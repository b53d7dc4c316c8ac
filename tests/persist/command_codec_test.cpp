// The command codec (server/persist): every world command round-trips through
// its JSON form, older recorded forms still decode, malformed arguments are
// refused naming the field.
#include "bustle/persist/command_codec.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace bustle;

namespace {

// Encodes, decodes and re-encodes: the kind must select the same alternative
// and the second encoding must equal the first (the encoding writes every
// field, and doubles in shortest round-trip form, so -0.0 stays "-0.0").
core::WorldCommand round_trip(const core::WorldCommand& c) {
  const std::string kind = core::command_name(c);
  const std::string args = persist::command_args_json(c);
  auto back = persist::decode_command(kind, args);
  INFO(kind << " " << args << " -> " << back.status().message());
  REQUIRE(back.ok());
  CHECK(back->index() == c.index());
  CHECK(persist::command_args_json(*back) == args);
  return *back;
}

std::string decode_error(const std::string& kind, const std::string& args) {
  auto c = persist::decode_command(kind, args);
  CHECK_FALSE(c.ok());
  CHECK(c.status().code() == core::StatusCode::DataLoss);
  return c.status().message();
}

bool same_double_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

}  // namespace

TEST_CASE("every world command round-trips through its JSON form") {
  core::LifecycleOp spawn_op;
  spawn_op.kind = core::LifecycleOp::Kind::Spawn;
  spawn_op.spawn = {
      "market", "market.loop", 0, 2500, {"market.loop", "x.market.office", "office.loop"}};
  core::LifecycleOp despawn_op;
  despawn_op.kind = core::LifecycleOp::Kind::Despawn;
  despawn_op.id = {UINT32_MAX, 7};
  core::LifecycleOp odd_op;  // a despawn carrying spawn fields: still decoded exactly
  odd_op.kind = core::LifecycleOp::Kind::Despawn;
  odd_op.spawn = {"", "x", 3, 1, {"x"}};
  odd_op.id = {4, 1};
  const std::vector<core::WorldCommand> all = {
      core::SetPedestrianTarget{12},
      core::DespawnEntity{{3, 9}},
      core::GarageRequest{"g0", "r1", "sedan", "lane0", -5},
      core::CancelGarageRequest{"g0", "r1"},
      core::SetVehicleStrategy{{8, 1}, 2},
      core::SetObservers{{{1.5, -2.5},
                          {0.0, 0.0, -0.0, true, -3.141592653589793},
                          {1e300, 5e-324, 12.25, false, 0.0}}},
      core::SetHour{23.999},
      core::SetTimeScale{3600},
      core::ForceFull{{5, 2}, false},
      core::SetAdmissionMask{{6, 3}, true},
      core::SetAdmissionMask{{UINT32_MAX, 1}, false},
      core::SetPreventionLevel{0},
      core::SetPreventionLevel{UINT32_MAX},
      core::KillPedestrian{{7, 2}},
      core::SetLaneClosed{"market.loop", UINT32_MAX, true},
      core::SetLaneClosed{"", 7, false},
      core::SpawnPedestrian{"market", "", 3, 0, {}},
      core::SpawnPedestrian{"", "office.loop", 255, UINT32_MAX, {}},
      core::SpawnPedestrian{"", "", 1, 0, {"a", "", "a", "\"quoted\" \u00e9"}},
      core::CancelSpawn{UINT64_MAX},
      core::SetClientObservers{{{1.5, -2.5}, {0.0, 0.0, -0.0, true, -3.141592653589793}}},
      core::SetClientObservers{},
      core::SetLifecycle{0, 9, 1000, UINT32_MAX},
      core::LifecycleBatch{{spawn_op, despawn_op, odd_op}},
      core::LifecycleBatch{},
      core::BorderArrivals{3,
                           UINT64_MAX,
                           {{{UINT32_MAX, 1}, 7, 0.1 + 0.2, 12}, {{4, 2}, 0, 5e-324, 0}},
                           {},
                           {},
                           {},
                           {},
                           {}},
      // Vehicles: every field of the row, doubles to the bit.
      core::BorderArrivals{1,
                           9,
                           {},
                           {},
                           {{{5, 2},
                             3,
                             UINT64_MAX,
                             1,
                             2,
                             40,
                             0.1 + 0.2,
                             13.9 / 3.0,
                             1,
                             2,
                             7,
                             0,
                             {6, 1},
                             99,
                             98,
                             0,
                             "req-1"}},
                           {{{8, 4}, 2, 3, 41, 5e-324}},
                           {{{11, 7}, 4}},
                           {3, UINT32_MAX}},
      core::BorderArrivals{},
  };
  // Every alternative of the variant is covered.
  std::vector<bool> seen(std::variant_size_v<core::WorldCommand>, false);
  for (const core::WorldCommand& c : all) {
    round_trip(c);
    seen[c.index()] = true;
  }
  for (std::size_t k = 0; k < seen.size(); ++k) {
    INFO("variant alternative " << k << " has no round-trip case");
    CHECK(seen[k]);
  }
}

TEST_CASE("new commands decode to exactly the fields that were encoded") {
  SECTION("observer points keep height and view direction bit for bit") {
    const core::SetObservers in{{{1.0, 2.0, -0.0, true, -0.0}, {3.0, 4.0, 1e-300, false, 6.5}}};
    const auto out = std::get<core::SetObservers>(round_trip(in));
    REQUIRE(out.points.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK(same_double_bits(out.points[k].x_m, in.points[k].x_m));
      CHECK(same_double_bits(out.points[k].y_m, in.points[k].y_m));
      CHECK(same_double_bits(out.points[k].z_m, in.points[k].z_m));
      CHECK(out.points[k].has_heading == in.points[k].has_heading);
      CHECK(same_double_bits(out.points[k].heading_rad, in.points[k].heading_rad));
    }
    CHECK(std::signbit(out.points[0].z_m));
  }
  SECTION("spawn, cancel, attach and lifecycle settings") {
    const auto sp = std::get<core::SpawnPedestrian>(
        round_trip(core::SpawnPedestrian{"office", "office.loop", 2, 750, {}}));
    CHECK(sp.zone == "office");
    CHECK(sp.lane == "office.loop");
    CHECK(sp.priority == 2);
    CHECK(sp.timeout_ms == 750);
    CHECK(sp.route.empty());
    CHECK(std::get<core::CancelSpawn>(round_trip(core::CancelSpawn{0x8000'0000'0000'0001ull}))
              .handle == 0x8000'0000'0000'0001ull);
    const auto co = std::get<core::SetClientObservers>(
        round_trip(core::SetClientObservers{{{3.0, 4.0, 1.0, true, 0.5}}}));
    REQUIRE(co.points.size() == 1);
    CHECK(co.points[0] == core::ObserverPoint{3.0, 4.0, 1.0, true, 0.5});
    const auto lc = std::get<core::SetLifecycle>(round_trip(core::SetLifecycle{1, 2, 3, 4}));
    CHECK(lc.growth_quota == 1);
    CHECK(lc.recycle_quota == 2);
    CHECK(lc.interval_ms == 3);
    CHECK(lc.migration_budget == 4);
  }
  SECTION("lifecycle batches keep op order, kinds and unused fields") {
    core::LifecycleBatch in;
    in.ops.resize(3);
    in.ops[0].kind = core::LifecycleOp::Kind::Despawn;
    in.ops[0].id = {2, 5};
    in.ops[1].spawn = {"facilities", "", 1, 10, {}};
    in.ops[1].id = {6, 6};  // unused by a spawn op, but kept
    in.ops[2].kind = core::LifecycleOp::Kind::Despawn;
    in.ops[2].id = {0, 0};
    in.ops.push_back({});
    in.ops[3].spawn = {"", "", 0, 0, {"market.loop", "x.market.office"}};
    const auto out = std::get<core::LifecycleBatch>(round_trip(in));
    REQUIRE(out.ops.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      CHECK(out.ops[k].kind == in.ops[k].kind);
      CHECK(out.ops[k].id == in.ops[k].id);
      CHECK(out.ops[k].spawn.zone == in.ops[k].spawn.zone);
      CHECK(out.ops[k].spawn.lane == in.ops[k].spawn.lane);
      CHECK(out.ops[k].spawn.priority == in.ops[k].spawn.priority);
      CHECK(out.ops[k].spawn.timeout_ms == in.ops[k].spawn.timeout_ms);
      CHECK(out.ops[k].spawn.route == in.ops[k].spawn.route);
    }
    // Readable: a despawn op is just its kind and id.
    CHECK(persist::command_args_json(core::LifecycleBatch{{in.ops[0]}}) ==
          R"({"ops":[{"id":[2,5],"kind":"despawn"}]})");
  }
}

TEST_CASE("a spawn's route round-trips as an array of lane ids, written only when there is one") {
  const core::SpawnPedestrian routed{
      "market", "", 2, 500, {"market.loop", "x.market.office", "office.loop", "office.loop"}};
  const auto out = std::get<core::SpawnPedestrian>(round_trip(routed));
  CHECK(out.route == routed.route);
  CHECK(out.zone == "market");
  CHECK(
      persist::command_args_json(routed) ==
      R"({"lane":"","priority":2,"route":["market.loop","x.market.office","office.loop","office.loop"],)"
      R"("timeout_ms":500,"zone":"market"})");
  // No route: no "route" key, so recordings made before routes encode alike.
  CHECK(persist::command_args_json(core::SpawnPedestrian{"market", "", 2, 500, {}}) ==
        R"({"lane":"","priority":2,"timeout_ms":500,"zone":"market"})");
  core::LifecycleOp despawn;  // a despawn with a leftover route keeps it
  despawn.kind = core::LifecycleOp::Kind::Despawn;
  despawn.id = {3, 1};
  despawn.spawn.route = {"a"};
  const auto batch = std::get<core::LifecycleBatch>(round_trip(core::LifecycleBatch{{despawn}}));
  REQUIRE(batch.ops.size() == 1);
  CHECK(batch.ops[0].spawn.route == despawn.spawn.route);
}

TEST_CASE("spawns recorded before routes (no \"route\" key) decode with an empty route") {
  auto c = persist::decode_command("spawn_pedestrian",
                                   R"({"zone":"market","lane":"","priority":1,"timeout_ms":0})");
  INFO(c.status().message());
  REQUIRE(c.ok());
  CHECK(std::get<core::SpawnPedestrian>(*c).route.empty());
  auto b = persist::decode_command(
      "lifecycle_batch",
      R"({"ops":[{"kind":"spawn","spawn":{"zone":"","lane":"office.loop","priority":3,"timeout_ms":9}}]})");
  INFO(b.status().message());
  REQUIRE(b.ok());
  const auto& ops = std::get<core::LifecycleBatch>(*b).ops;
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].spawn.lane == "office.loop");
  CHECK(ops[0].spawn.route.empty());
  // An explicit empty array is the same as no route.
  c = persist::decode_command("spawn_pedestrian",
                              R"({"zone":"","lane":"","priority":1,"timeout_ms":0,"route":[]})");
  REQUIRE(c.ok());
  CHECK(std::get<core::SpawnPedestrian>(*c).route.empty());
}

TEST_CASE("observer points recorded before observer views (plain [x, y]) still decode") {
  auto c = persist::decode_command("set_observers", R"({"points":[[25.0,-4.5],[0,0]]})");
  INFO(c.status().message());
  REQUIRE(c.ok());
  const auto& pts = std::get<core::SetObservers>(*c).points;
  REQUIRE(pts.size() == 2);
  CHECK(pts[0].x_m == 25.0);
  CHECK(pts[0].y_m == -4.5);
  CHECK(pts[0].z_m == 0.0);
  CHECK_FALSE(pts[0].has_heading);
  CHECK(pts[0].heading_rad == 0.0);
}

TEST_CASE("malformed arguments of the new commands are refused, naming the field") {
  CHECK(decode_error("spawn_pedestrian", R"({"zone":"a","lane":"","priority":256,"timeout_ms":0})")
            .starts_with("priority:"));
  CHECK(decode_error("spawn_pedestrian", R"({"lane":"","priority":1,"timeout_ms":0})")
            .starts_with("zone:"));
  CHECK(decode_error("spawn_pedestrian", R"({"zone":"","lane":"","priority":1,"timeout_ms":-1})")
            .starts_with("timeout_ms:"));
  CHECK(decode_error("spawn_pedestrian",
                     R"({"zone":"","lane":"","priority":1,"timeout_ms":0,"route":"a"})")
            .starts_with("route:"));
  CHECK(decode_error("spawn_pedestrian",
                     R"({"zone":"","lane":"","priority":1,"timeout_ms":0,"route":["a",2]})")
            .starts_with("route[1]:"));
  CHECK(decode_error("lifecycle_batch",
                     R"({"ops":[{"kind":"spawn","spawn":{"zone":"","lane":"","priority":1,)"
                     R"("timeout_ms":0,"route":[null]}}]})")
            .starts_with("ops[0].spawn.route[0]:"));
  CHECK(decode_error("cancel_spawn", R"({"handle":-1})").starts_with("handle:"));
  CHECK(decode_error("cancel_spawn", R"({"handle":1.5})").starts_with("handle:"));
  // Recorded by builds before the representation stages left the
  // simulation: refused, saying why, however well-formed.
  CHECK(decode_error("report_attached", R"({"id":[1,1]})").find("no longer a world command") !=
        std::string::npos);
  CHECK(decode_error("set_client_observers", R"({"points":[[1]]})").starts_with("points:"));
  CHECK(decode_error("set_lifecycle", R"({"growth_quota":1,"recycle_quota":1,"interval_ms":250})")
            .starts_with("migration_budget:"));
  CHECK(decode_error("lifecycle_batch", R"({"ops":{}})").starts_with("ops:"));
  CHECK(decode_error("lifecycle_batch",
                     R"({"ops":[{"kind":"despawn","id":[1,1]},{"kind":"teleport"}]})")
            .starts_with("ops[1].kind:"));
  CHECK(decode_error("lifecycle_batch", R"({"ops":[{"kind":"spawn"}]})")
            .starts_with("ops[0].spawn:"));
  CHECK(
      decode_error("lifecycle_batch", R"({"ops":[{"kind":"spawn","spawn":{"zone":"","lane":7}}]})")
          .starts_with("ops[0].spawn.lane:"));
  CHECK(
      decode_error("lifecycle_batch", R"({"ops":[{"kind":"despawn"}]})").starts_with("ops[0].id:"));
  CHECK(decode_error("set_observers", R"({"points":[[1,2,3]]})").starts_with("points:"));
  CHECK(decode_error("set_observers", R"({"points":[[1,2,3,1,0]]})")
            .starts_with("points:"));  // has_heading must be a boolean
  CHECK(decode_error("set_observers", R"({"points":[[1,2,null,false,0]]})").starts_with("points:"));
  CHECK(decode_error("border_arrivals", R"({"sent_step":1,"pedestrians":[]})")
            .starts_with("from_district:"));
  CHECK(decode_error("border_arrivals", R"({"from_district":1,"sent_step":1,"pedestrians":{}})")
            .starts_with("pedestrians:"));
  CHECK(decode_error("border_arrivals",
                     R"({"from_district":1,"sent_step":1,"pedestrians":[[1,1,2,"0.5",0]]})")
            .starts_with("pedestrians[0]:"));
  CHECK(decode_error("border_arrivals",
                     R"({"from_district":1,"sent_step":1,"pedestrians":[[1,1,2,0.5]]})")
            .starts_with("pedestrians[0]:"));
  CHECK(decode_error("border_arrivals",
                     R"({"from_district":1,"sent_step":1,"pedestrians":[],"returned":[[1]]})")
            .starts_with("returned[0]:"));
}

TEST_CASE("border arrivals keep every bit of the walking time and the ids going home") {
  const core::BorderArrivals sent{1,
                                  42,
                                  {{{9, 3}, 17, 0.1 + 0.2, 5}, {{10, 1}, 2, -0.0, 0}},
                                  {{7, 2}, {UINT32_MAX, 1}},
                                  {},
                                  {},
                                  {},
                                  {}};
  const core::WorldCommand back = round_trip(sent);
  const auto& got = std::get<core::BorderArrivals>(back);
  CHECK(got.from_district == 1);
  CHECK(got.sent_step == 42);
  REQUIRE(got.pedestrians.size() == 2);
  CHECK(got.pedestrians[0] == sent.pedestrians[0]);
  CHECK(same_double_bits(got.pedestrians[0].time_left_s, 0.1 + 0.2));
  CHECK(same_double_bits(got.pedestrians[1].time_left_s, -0.0));
  CHECK(got.returned == sent.returned);  // the ids going home, in order
}
