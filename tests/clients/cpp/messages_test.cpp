// The SDK's message builders: Hello, Subscribe, every command and the lease
// report round-trip through the server's verifier with their arguments.
#include "bustle/client/messages.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "bustle/proto/framing.hpp"

namespace c = bustle::client;
namespace wire = bustle::wire;

namespace {

// Checks the prefix, verifies like the server does, and returns the root.
const wire::ClientFrame* verified_client_frame(const c::Frame& frame) {
  REQUIRE(frame.size() > 4);
  const std::uint32_t n = std::uint32_t{frame[0]} | (std::uint32_t{frame[1]} << 8) |
                          (std::uint32_t{frame[2]} << 16) | (std::uint32_t{frame[3]} << 24);
  REQUIRE(n == frame.size() - 4);
  REQUIRE(n <= bustle::proto::kClientFrameMaxBytes);
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(c::frame_payload(frame), error);
  INFO(error);
  REQUIRE(root != nullptr);
  return root;
}

const wire::Command* command_of(const c::Frame& frame, std::uint32_t request_id) {
  const auto* root = verified_client_frame(frame);
  const auto* cmd = root->message_as_Command();
  REQUIRE(cmd != nullptr);
  CHECK(cmd->request_id() == request_id);
  return cmd;
}

}  // namespace

TEST_CASE("Hello round-trips through the server's verifier", "[messages]") {
  c::HelloParams p;
  p.client_name = "unit";
  p.token = "secret";
  p.role = wire::Role::Operator;
  const c::Frame frame = c::build_hello(p);
  const auto* hello = verified_client_frame(frame)->message_as_Hello();
  REQUIRE(hello != nullptr);
  CHECK(hello->protocol_version() == bustle::proto::kProtocolVersion);
  CHECK(hello->client_name()->str() == "unit");
  CHECK(hello->token()->str() == "secret");
  CHECK(hello->role() == wire::Role::Operator);
}

TEST_CASE("Hello without token omits it and long strings are truncated", "[messages]") {
  c::HelloParams p;
  p.client_name = std::string(c::kMaxHelloStringBytes + 100, 'n');
  const c::Frame frame = c::build_hello(p);
  const auto* hello = verified_client_frame(frame)->message_as_Hello();
  REQUIRE(hello != nullptr);
  CHECK(hello->token() == nullptr);
  CHECK(hello->role() == wire::Role::Viewer);
  CHECK(hello->client_name()->size() == c::kMaxHelloStringBytes);
}

TEST_CASE("Subscribe carries its request id and the kinds, or none for every kind", "[messages]") {
  const c::Frame all_frame = c::build_subscribe(5);
  const auto* all = verified_client_frame(all_frame)->message_as_Subscribe();
  REQUIRE(all != nullptr);
  CHECK(all->request_id() == 5);
  CHECK(all->kinds() == nullptr);
  CHECK(all->observers() == nullptr);  // the whole city
  CHECK(all->budgets() == nullptr);    // the server's defaults
  CHECK(all->motion_tolerance_mm() == 10);
  c::SubscribeParams p;
  p.kinds = {c::EntityKind::Vehicle};
  const c::Frame some_frame = c::build_subscribe(6, p);
  const auto* some = verified_client_frame(some_frame)->message_as_Subscribe();
  REQUIRE(some != nullptr);
  REQUIRE(some->kinds() != nullptr);
  REQUIRE(some->kinds()->size() == 1);
  CHECK(some->kinds()->Get(0) == wire::EntityKind::Vehicle);
}

TEST_CASE("Subscribe and UpdateInterest carry observers, budgets and the tolerance", "[messages]") {
  c::SubscribeParams p;
  p.observers = {c::InterestObserver{10.5, -3.0, 1.75, 0.5, 80.0},
                 c::InterestObserver{1.0, 2.0, 0.0, std::nullopt, 150.0}};
  p.budgets = c::RepresentationBudgets{12, 0, 99};
  p.motion_tolerance_mm = 0;
  const c::Frame frame = c::build_subscribe(9, p);
  const auto* sub = verified_client_frame(frame)->message_as_Subscribe();
  REQUIRE(sub != nullptr);
  CHECK(sub->request_id() == 9);
  CHECK(sub->motion_tolerance_mm() == 0);
  REQUIRE(sub->observers() != nullptr);
  REQUIRE(sub->observers()->size() == 2);
  const auto* o0 = sub->observers()->Get(0);
  CHECK(o0->x_m() == 10.5);
  CHECK(o0->y_m() == -3.0);
  CHECK(o0->z_m() == 1.75);
  CHECK(o0->has_heading());
  CHECK(o0->heading_rad() == 0.5);
  CHECK(o0->radius_m() == 80.0);
  const auto* o1 = sub->observers()->Get(1);
  CHECK_FALSE(o1->has_heading());
  CHECK(o1->radius_m() == 150.0);
  REQUIRE(sub->budgets() != nullptr);
  CHECK(sub->budgets()->actors() == 12);
  CHECK(sub->budgets()->instances() == 0);
  CHECK(sub->budgets()->markers() == 99);

  c::UpdateInterestParams u;
  u.observers = {c::InterestObserver{7.0, 8.0, 0.0, std::nullopt, 30.0}};
  const c::Frame update = c::build_update_interest(10, u);
  const auto* ui = verified_client_frame(update)->message_as_UpdateInterest();
  REQUIRE(ui != nullptr);
  CHECK(ui->request_id() == 10);
  REQUIRE(ui->observers() != nullptr);
  CHECK(ui->observers()->Get(0)->radius_m() == 30.0);
  CHECK(ui->budgets() == nullptr);

  // Far more observers than the server takes are capped so the frame fits.
  c::UpdateInterestParams many;
  many.observers.assign(c::kMaxInterestObservers + 50, c::InterestObserver{});
  const c::Frame capped = c::build_update_interest(11, many);
  const auto* cu = verified_client_frame(capped)->message_as_UpdateInterest();
  REQUIRE(cu != nullptr);
  CHECK(cu->observers()->size() == c::kMaxInterestObservers);
}

TEST_CASE("Every command round-trips with its request id and arguments", "[messages]") {
  // Each frame is kept in a local: the views point into it.
  const c::Frame pause = c::build_command(1, c::PauseCmd{});
  CHECK(command_of(pause, 1)->body_as_Pause() != nullptr);
  const c::Frame resume = c::build_command(2, c::ResumeCmd{});
  CHECK(command_of(resume, 2)->body_as_Resume() != nullptr);
  const c::Frame query = c::build_command(3, c::QueryStatsCmd{});
  CHECK(command_of(query, 3)->body_as_QueryStats() != nullptr);

  const c::Frame step_frame = c::build_command(4, c::StepCmd{25});
  const auto* step = command_of(step_frame, 4)->body_as_Step();
  REQUIRE(step != nullptr);
  CHECK(step->count() == 25);

  const c::Frame target_frame = c::build_command(5, c::SetPedestrianTargetCmd{300});
  const auto* target = command_of(target_frame, 5)->body_as_SetPedestrianTarget();
  REQUIRE(target != nullptr);
  CHECK(target->count() == 300);

  const c::Frame despawn_frame = c::build_command(0xffffffffu, c::DespawnEntityCmd{{17, 3}});
  const auto* despawn = command_of(despawn_frame, 0xffffffffu)->body_as_DespawnEntity();
  REQUIRE(despawn != nullptr);
  CHECK(despawn->id()->index() == 17);
  CHECK(despawn->id()->generation() == 3);
}

TEST_CASE("command_name names every command", "[messages]") {
  CHECK(std::string(c::command_name(c::PauseCmd{})) == "pause");
  CHECK(std::string(c::command_name(c::ResumeCmd{})) == "resume");
  CHECK(std::string(c::command_name(c::StepCmd{})) == "step");
  CHECK(std::string(c::command_name(c::QueryStatsCmd{})) == "query_stats");
  CHECK(std::string(c::command_name(c::SetPedestrianTargetCmd{})) == "set_pedestrian_target");
  CHECK(std::string(c::command_name(c::DespawnEntityCmd{})) == "despawn_entity");
}

TEST_CASE("Snapshot commands round-trip with their names and job id", "[messages][snapshots]") {
  const c::Frame checkpoint_frame = c::build_command(10, c::CheckpointCmd{"before-rush"});
  const auto* checkpoint = command_of(checkpoint_frame, 10)->body_as_Checkpoint();
  REQUIRE(checkpoint != nullptr);
  REQUIRE(checkpoint->name() != nullptr);
  CHECK(checkpoint->name()->str() == "before-rush");

  const c::Frame restore_frame = c::build_command(11, c::RestoreCmd{"before-rush"});
  const auto* restore = command_of(restore_frame, 11)->body_as_Restore();
  REQUIRE(restore != nullptr);
  CHECK(restore->name()->str() == "before-rush");

  const c::Frame save_frame = c::build_command(12, c::SaveCmd{"slot.1"});
  const auto* save = command_of(save_frame, 12)->body_as_Save();
  REQUIRE(save != nullptr);
  CHECK(save->name()->str() == "slot.1");

  const c::Frame load_frame = c::build_command(13, c::LoadCmd{"slot.1"});
  const auto* load = command_of(load_frame, 13)->body_as_Load();
  REQUIRE(load != nullptr);
  CHECK(load->name()->str() == "slot.1");

  const c::Frame list_frame = c::build_command(14, c::ListSnapshotsCmd{});
  CHECK(command_of(list_frame, 14)->body_as_ListSnapshots() != nullptr);

  const c::Frame delete_frame = c::build_command(15, c::DeleteSnapshotCmd{"old_one"});
  const auto* del = command_of(delete_frame, 15)->body_as_DeleteSnapshot();
  REQUIRE(del != nullptr);
  CHECK(del->name()->str() == "old_one");

  const c::Frame job_frame = c::build_command(16, c::QueryJobCmd{0x1'0000'0002ull});
  const auto* job = command_of(job_frame, 16)->body_as_QueryJob();
  REQUIRE(job != nullptr);
  CHECK(job->job_id() == 0x1'0000'0002ull);
}

TEST_CASE("Snapshot names are sent as given (empty included) or truncated to fit",
          "[messages][snapshots]") {
  // The server judges names; the builder must not drop or alter short ones.
  const c::Frame empty_frame = c::build_command(1, c::RestoreCmd{""});
  const auto* empty = command_of(empty_frame, 1)->body_as_Restore();
  REQUIRE(empty != nullptr);
  REQUIRE(empty->name() != nullptr);
  CHECK(empty->name()->size() == 0);

  const c::Frame odd_frame = c::build_command(2, c::SaveCmd{"has space/and\xc3\xa9"});
  CHECK(command_of(odd_frame, 2)->body_as_Save()->name()->str() == "has space/and\xc3\xa9");

  const c::Frame long_frame =
      c::build_command(3, c::CheckpointCmd{std::string(c::kMaxCommandStringBytes + 500, 'x')});
  const auto* cp = command_of(long_frame, 3)->body_as_Checkpoint();
  REQUIRE(cp != nullptr);
  CHECK(cp->name()->size() == c::kMaxCommandStringBytes);
}

TEST_CASE("command_name names the snapshot commands", "[messages][snapshots]") {
  CHECK(std::string(c::command_name(c::CheckpointCmd{})) == "checkpoint");
  CHECK(std::string(c::command_name(c::RestoreCmd{})) == "restore");
  CHECK(std::string(c::command_name(c::SaveCmd{})) == "save");
  CHECK(std::string(c::command_name(c::LoadCmd{})) == "load");
  CHECK(std::string(c::command_name(c::ListSnapshotsCmd{})) == "list_snapshots");
  CHECK(std::string(c::command_name(c::DeleteSnapshotCmd{})) == "delete_snapshot");
  CHECK(std::string(c::command_name(c::QueryJobCmd{})) == "query_job");
}

TEST_CASE("LeaseReport carries every lease, capped at the protocol's limit", "[messages]") {
  std::vector<c::Lease> leases = {
      {{7, 1}, c::LeaseState::Assigned, c::RepresentationHint::Actor, c::UnassignedReason::None},
      {{9, 2},
       c::LeaseState::Unassigned,
       c::RepresentationHint::None,
       c::UnassignedReason::PoolAtCap},
      {{11, 1}, c::LeaseState::Released, c::RepresentationHint::None, c::UnassignedReason::None},
  };
  // The frame is kept: the verified root points into it.
  const c::Frame frame = c::build_lease_report(42, leases);
  const auto* report = verified_client_frame(frame)->message_as_LeaseReport();
  REQUIRE(report != nullptr);
  CHECK(report->request_id() == 42);
  REQUIRE(report->entries()->size() == 3);
  CHECK(report->entries()->Get(1)->id().index() == 9);
  CHECK(report->entries()->Get(1)->id().generation() == 2);
  CHECK(report->entries()->Get(1)->state() == wire::LeaseState::Unassigned);
  CHECK(report->entries()->Get(1)->reason() == wire::UnassignedReason::PoolAtCap);
  CHECK(report->entries()->Get(0)->representation() ==
        static_cast<std::uint8_t>(wire::RepresentationHint::Actor));
  leases.assign(c::kLeaseEntriesMax + 10, leases[0]);
  const c::Frame capped_frame = c::build_lease_report(0, leases);
  const auto* capped = verified_client_frame(capped_frame)->message_as_LeaseReport();
  REQUIRE(capped != nullptr);
  CHECK(capped->entries()->size() == c::kLeaseEntriesMax);
  CHECK(capped->request_id() == 0);
}
