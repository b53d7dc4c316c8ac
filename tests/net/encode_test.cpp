// Server->client encoding: every frame verifies, and the population fields of
// CommandResult, SpawnUpdate and Welcome carry exactly what was given.
#include "bustle/net/encode.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "bustle/proto/framing.hpp"

using namespace bustle;

namespace {

const wire::ServerFrame* verified(const flatbuffers::FlatBufferBuilder& fbb) {
  std::string error;
  const wire::ServerFrame* f =
      proto::verify_server_frame({fbb.GetBufferPointer(), fbb.GetSize()}, error);
  INFO(error);
  REQUIRE(f != nullptr);
  return f;
}

const wire::CommandResult& result_of(const flatbuffers::FlatBufferBuilder& fbb) {
  const wire::CommandResult* r = verified(fbb)->message_as_CommandResult();
  REQUIRE(r != nullptr);
  return *r;
}

net::SpawnReport spawn_report() {
  net::SpawnReport s;
  s.handle.handle = 17;
  s.handle.state = core::SpawnState::Registered;
  s.handle.entity = {12, 3};
  s.handle.zone = 1;
  s.handle.lane = 5;
  s.handle.priority = core::PriorityClass::Story;
  s.handle.requested_step = 40;
  s.handle.state_step = 42;
  s.zone = "office";
  return s;
}

}  // namespace

TEST_CASE("a plain result carries none of the optional parts") {
  net::OutboundResult r;
  r.request_id = 9;
  r.status = core::CommandStatus::Accepted;
  r.applied_step = 5;
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const wire::CommandResult& w = result_of(fbb);
  CHECK(w.request_id() == 9);
  CHECK(w.applied_step() == 5);
  CHECK(w.message() == nullptr);
  CHECK(w.handle() == 0);
  CHECK(w.entity() == nullptr);
  CHECK(w.batch() == wire::BatchStatus::None);
  CHECK(w.handles() == nullptr);
  CHECK(w.entity_info() == nullptr);
  CHECK(w.population() == nullptr);
  CHECK(w.spawn() == nullptr);
  CHECK(w.zones() == nullptr);
}

TEST_CASE("spawn and batch fields of a result round-trip") {
  net::OutboundResult r;
  r.request_id = 3;
  r.status = core::CommandStatus::Rejected;
  r.reason = core::RejectReason::InvariantFailure;
  r.message = "boom";
  r.handle = 77;
  r.entity = {8, 2};
  r.batch = core::BatchStatus::InvariantFailure;
  r.handles = {4, 5, 6};
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const wire::CommandResult& w = result_of(fbb);
  CHECK(w.reason() == wire::RejectReason::InvariantFailure);
  CHECK(w.message()->str() == "boom");
  CHECK(w.handle() == 77);
  REQUIRE(w.entity() != nullptr);
  CHECK(w.entity()->index() == 8);
  CHECK(w.entity()->generation() == 2);
  CHECK(w.batch() == wire::BatchStatus::InvariantFailure);
  REQUIRE(w.handles() != nullptr);
  CHECK(std::vector<std::uint64_t>(w.handles()->begin(), w.handles()->end()) ==
        std::vector<std::uint64_t>{4, 5, 6});

  // A committed batch without spawn ops still says "no handles" explicitly.
  net::OutboundResult empty;
  empty.batch = core::BatchStatus::Committed;
  net::encode_command_result(empty, fbb);
  REQUIRE(result_of(fbb).handles() != nullptr);
  CHECK(result_of(fbb).handles()->size() == 0);
}

TEST_CASE("QuerySpawn and SpawnUpdate carry the whole spawn status") {
  net::OutboundResult r;
  r.spawn = spawn_report();
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const wire::SpawnStatus* s = result_of(fbb).spawn();
  REQUIRE(s != nullptr);
  CHECK(s->handle() == 17);
  CHECK(s->state() == wire::SpawnState::Registered);
  CHECK(s->failure() == wire::SpawnFailure::None);
  CHECK_FALSE(s->terminal());
  CHECK(s->entity()->index() == 12);
  CHECK(s->zone()->str() == "office");
  CHECK(s->lane() == 5);
  CHECK(s->priority() == wire::PriorityClass::Story);
  CHECK(s->requested_step() == 40);
  CHECK(s->state_step() == 42);

  net::SpawnReport failed = spawn_report();
  failed.handle.state = core::SpawnState::Failed;
  failed.handle.failure = core::SpawnFailure::EntityGone;
  failed.handle.lane = core::kAnyLane;
  failed.zone.clear();
  net::encode_spawn_update(failed, fbb);
  const wire::SpawnUpdate* u = verified(fbb)->message_as_SpawnUpdate();
  REQUIRE(u != nullptr);
  REQUIRE(u->spawn() != nullptr);
  CHECK(u->spawn()->state() == wire::SpawnState::Failed);
  CHECK(u->spawn()->failure() == wire::SpawnFailure::EntityGone);
  CHECK(u->spawn()->terminal());
  CHECK(u->spawn()->zone() == nullptr);      // any zone
  CHECK(u->spawn()->lane() == 4294967295u);  // the schema's "none"
}

TEST_CASE("QueryEntity carries every axis and the scenario names") {
  net::OutboundResult r;
  net::EntityInfoReport e;
  e.report.id = {30, 4};
  e.report.alive = true;
  e.report.kind = core::EntityKind::Pedestrian;
  e.report.lifecycle = core::LifecycleState::Retiring;
  e.report.tier = core::SimTier::Simulated;
  e.report.representation = core::RepresentationHint::Instanced;
  e.report.priority = core::PriorityClass::Community;
  e.report.origin = core::PedestrianOrigin::Resident;
  e.report.saveable = true;
  e.report.forced_full = true;
  e.report.work_slot = 3;
  e.report.lane = 7;
  e.report.s_m = 1.5;
  e.report.pose = {10.0, -20.0, 0.0};
  e.report.effective_distance_m = 33.0;
  e.report.spawn_handle = 0;
  e.report.retiring_reason = core::DespawnReason::LaneDeadEnd;
  e.report.release_step = 99;
  e.community = "vendors";
  e.zone = "market";
  e.work_point = "stalls";
  r.entity_info = e;
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const wire::EntityInfo* w = result_of(fbb).entity_info();
  REQUIRE(w != nullptr);
  CHECK(w->id()->index() == 30);
  CHECK(w->alive());
  CHECK(w->lifecycle() == wire::LifecycleState::Retiring);
  CHECK(w->tier() == wire::SimTier::Simulated);
  CHECK(w->representation() == wire::RepresentationHint::Instanced);
  CHECK(w->priority() == wire::PriorityClass::Community);
  CHECK(w->origin() == wire::PedestrianOrigin::Resident);
  CHECK(w->saveable());
  CHECK(w->forced_full());
  CHECK(w->community()->str() == "vendors");
  CHECK(w->zone()->str() == "market");
  CHECK(w->work_point()->str() == "stalls");
  CHECK(w->work_slot() == 3);
  CHECK(w->lane() == 7);
  CHECK(w->s_m() == 1.5);
  CHECK(w->x_m() == 10.0);
  CHECK(w->y_m() == -20.0);
  CHECK(w->effective_distance_m() == 33.0);
  CHECK(w->retiring_reason() == wire::DespawnReason::LaneDeadEnd);
  CHECK(w->release_step() == 99);

  // Gone: no names, defaults for the indices.
  r.entity_info = net::EntityInfoReport{};
  net::encode_command_result(r, fbb);
  const wire::EntityInfo* gone = result_of(fbb).entity_info();
  REQUIRE(gone != nullptr);
  CHECK_FALSE(gone->alive());
  CHECK(gone->lifecycle() == wire::LifecycleState::Gone);
  CHECK(gone->community() == nullptr);
  CHECK(gone->lane() == -1);
  CHECK(gone->work_slot() == -1);
}

TEST_CASE("QueryPopulation carries communities, pipeline, tiers and ledger") {
  net::PopulationReport p;
  p.hour = 8.5;
  p.time_scale = 60;
  p.settings = {3, 4, 500, 6};
  p.communities.push_back({{}, "vendors", 24, 12, "market", 10, 14, true});
  p.communities.push_back({{}, "idle", 5, 0, "", 0, 5, false});
  p.residents = 29;
  p.residents_active = 10;
  p.residents_retiring = 1;
  p.background = 7;
  p.spawned = 2;
  p.pedestrian_target = 20;
  p.handoffs_pending = 1;
  p.spawn_live[static_cast<std::size_t>(core::SpawnState::Queued)] = 3;
  p.spawn.requested = 11;
  p.spawn.per_state_total[static_cast<std::size_t>(core::SpawnState::TimedOut)] = 2;
  p.spawn.deferred_by_cap = 1;
  p.spawn.deferred_by_capacity = 2;
  p.spawn.deferred_by_zone = 3;
  p.retiring = 4;
  p.faded_total = 50;
  p.fade_skipped_total = 60;
  p.despawned_by_reason[static_cast<std::size_t>(core::DespawnReason::Requested)] = 8;
  p.tiers.per_tier[1] = 9;
  p.tiers.promoted = 1;
  p.tiers.demoted = 2;
  p.tiers.deferred = 3;
  p.tiers.forced = 4;
  p.tiers.forced_overflow = 5;
  p.force_full_refused = 6;
  p.ledger = {12, 1.5, 2.5, 0.75};
  net::OutboundResult r;
  r.population = p;
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const wire::PopulationInfo* w = result_of(fbb).population();
  REQUIRE(w != nullptr);
  CHECK(w->hour() == 8.5);
  CHECK(w->time_scale() == 60);
  CHECK(w->growth_quota() == 3);
  CHECK(w->recycle_quota() == 4);
  CHECK(w->interval_ms() == 500);
  CHECK(w->migration_budget() == 6);
  REQUIRE(w->communities()->size() == 2);
  const wire::CommunityInfo* c0 = w->communities()->Get(0);
  CHECK(c0->id()->str() == "vendors");
  CHECK(c0->base_population() == 24);
  CHECK(c0->target() == 12);
  CHECK(c0->zone()->str() == "market");
  CHECK(c0->active() == 10);
  CHECK(c0->dormant() == 14);
  CHECK(c0->saveable());
  CHECK(w->communities()->Get(1)->zone() == nullptr);
  CHECK(w->residents() == 29);
  CHECK(w->residents_active() == 10);
  CHECK(w->residents_retiring() == 1);
  CHECK(w->background() == 7);
  CHECK(w->spawned() == 2);
  CHECK(w->pedestrian_target() == 20);
  CHECK(w->handoffs_pending() == 1);
  REQUIRE(w->spawn_live()->size() == core::kSpawnStateCount);
  CHECK(w->spawn_live()->Get(0) == 3);
  REQUIRE(w->spawn_totals()->size() == core::kSpawnStateCount);
  CHECK(w->spawn_totals()->Get(static_cast<flatbuffers::uoffset_t>(wire::SpawnState::TimedOut)) ==
        2);
  CHECK(w->spawn_requested() == 11);
  CHECK(w->spawn_deferred_by_cap() == 1);
  CHECK(w->spawn_deferred_by_capacity() == 2);
  CHECK(w->spawn_deferred_by_zone() == 3);
  CHECK(w->retiring() == 4);
  CHECK(w->faded_total() == 50);
  CHECK(w->fade_skipped_total() == 60);
  REQUIRE(w->despawned_by_reason()->size() == core::kDespawnReasonCount);
  CHECK(w->despawned_by_reason()->Get(
            static_cast<flatbuffers::uoffset_t>(core::DespawnReason::Requested)) == 8);
  REQUIRE(w->tiers()->size() == 3);
  CHECK(w->tiers()->Get(1) == 9);
  CHECK(w->tier_promoted() == 1);
  CHECK(w->tier_demoted() == 2);
  CHECK(w->tier_deferred() == 3);
  CHECK(w->forced_full() == 4);
  CHECK(w->forced_overflow() == 5);
  CHECK(w->force_full_refused() == 6);
  CHECK(w->ledger_fragments() == 12);
  CHECK(w->ledger_deficit() == 1.5);
  CHECK(w->ledger_surplus() == 2.5);
  CHECK(w->ledger_max_deficit() == 0.75);
}

TEST_CASE("QueryZones carries the migration, handoff and retiring counts") {
  net::ZoneReport z;
  z.id = "market";
  z.capacity = 30;
  z.status.target = 12;
  z.status.migrated_in = 1;
  z.status.deferred_by_migration = 2;
  z.status.handoffs_started = 3;
  z.status.handoffs_accepted = 4;
  z.status.handoffs_returned = 5;
  z.status.retiring = 6;
  net::OutboundResult r;
  r.zones = std::vector<net::ZoneReport>{z};
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_command_result(r, fbb);
  const auto* zones = result_of(fbb).zones();
  REQUIRE(zones != nullptr);
  REQUIRE(zones->size() == 1);
  const wire::ZoneInfo* w = zones->Get(0);
  CHECK(w->id()->str() == "market");
  CHECK(w->capacity() == 30);
  CHECK(w->target() == 12);
  CHECK(w->migrated_in() == 1);
  CHECK(w->deferred_by_migration() == 2);
  CHECK(w->handoffs_started() == 3);
  CHECK(w->handoffs_accepted() == 4);
  CHECK(w->handoffs_returned() == 5);
  CHECK(w->retiring() == 6);
}

TEST_CASE("Welcome carries lane chains and the dot interval") {
  net::WelcomeInfo w;
  w.server_version = "test 1";
  w.scenario_id = "s";
  w.step_us = 100'000;
  w.clock_mode = net::ClockMode::Manual;
  core::Lane lane;
  lane.id = "sw0";
  lane.points = {{0, 0}, {10, 0}};
  lane.length_m = 10;
  w.lanes = {lane, lane};
  core::LaneChain ring;
  ring.lanes = {0, 1};
  ring.cyclic = true;
  ring.pedestrian = true;
  ring.length_m = 20;
  core::LaneChain road;
  road.lanes = {1};
  road.pedestrian = false;
  road.length_m = 10;
  w.chains = {ring, road};
  w.dots_every_steps = 10;
  flatbuffers::FlatBufferBuilder fbb;
  net::encode_welcome(w, 5, net::Role::Operator, 77, fbb);
  const wire::Welcome* m = verified(fbb)->message_as_Welcome();
  REQUIRE(m != nullptr);
  CHECK(m->session_id() == 5);
  CHECK(m->role() == wire::Role::Operator);
  CHECK(m->current_step() == 77);
  CHECK(m->clock_mode() == wire::ClockMode::Manual);
  CHECK(m->lanes()->size() == 2);
  CHECK(m->dots_every_steps() == 10);
  REQUIRE(m->chains() != nullptr);
  REQUIRE(m->chains()->size() == 2);
  const wire::LaneChainInfo* c0 = m->chains()->Get(0);
  CHECK(std::vector<std::uint32_t>(c0->lanes()->begin(), c0->lanes()->end()) ==
        std::vector<std::uint32_t>{0, 1});
  CHECK(c0->cyclic());
  CHECK(c0->pedestrian());
  CHECK(c0->length_m() == 20.0f);
  CHECK_FALSE(m->chains()->Get(1)->pedestrian());
  CHECK_FALSE(m->chains()->Get(1)->cyclic());
}

TEST_CASE("JobUpdate and Error frames verify") {
  flatbuffers::FlatBufferBuilder fbb;
  net::JobInfo job;
  job.job_id = 3;
  job.state = wire::JobState::Committed;
  job.terminal = true;
  job.name = "snap";
  job.step = 10;
  net::encode_job_update(job, fbb);
  const wire::JobUpdate* u = verified(fbb)->message_as_JobUpdate();
  REQUIRE(u != nullptr);
  CHECK(u->job()->job_id() == 3);
  CHECK(u->job()->terminal());
  net::encode_error(wire::ErrorCode::ServerFull, "full", fbb);
  const wire::Error* e = verified(fbb)->message_as_Error();
  REQUIRE(e != nullptr);
  CHECK(e->code() == wire::ErrorCode::ServerFull);
  CHECK(e->message()->str() == "full");
}
