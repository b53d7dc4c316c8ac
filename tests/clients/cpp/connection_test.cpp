// Transport tests against a scripted fake server on loopback: reassembly over
// a real socket, timeouts that keep the connection, EOF, protocol errors that
// close it, and the Client's handshake and command bookkeeping.
#include "bustle/client/connection.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "bustle/client/client.hpp"
#include "support/fake_server.hpp"
#include "support/server_frames.hpp"

namespace c = bustle::client;
namespace t = bustle::test;
namespace wire = bustle::wire;
using namespace std::chrono_literals;

namespace {

std::vector<std::uint8_t> delta_frame(std::uint64_t step, bool baseline = false) {
  t::DeltaSpec d;
  d.step = step;
  d.baseline = baseline;
  d.entered = {t::enter(static_cast<std::uint32_t>(step), 1, 0, 1)};
  return t::framed(t::delta_payload(d));
}

void check_no_failures(t::FakeServer& server) {
  for (const auto& f : server.join()) FAIL_CHECK(f);
}

// Reads the Hello and answers Welcome; false (and fail()) if no valid Hello.
bool accept_hello(t::FakePeer& peer, t::FakeServer& server, wire::Role role = wire::Role::Viewer) {
  const auto hello = peer.read_frame(3000ms);
  if (!hello) {
    server.fail("no Hello");
    return false;
  }
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(*hello, error);
  if (root == nullptr || root->message_as_Hello() == nullptr) {
    server.fail("first frame is not a valid Hello: " + error);
    return false;
  }
  if (root->message_as_Hello()->protocol_version() != bustle::proto::kProtocolVersion) {
    server.fail("Hello has the wrong protocol version");
  }
  return peer.write(t::framed(t::welcome_payload(10, role)));
}

// Reads a Subscribe and answers it (Accepted, or as given); false (and
// fail()) if the next frame is not a Subscribe.
// The next frame's payload if it is a Subscribe (else fail() and nullopt).
std::optional<std::vector<std::uint8_t>> read_subscribe(t::FakePeer& peer, t::FakeServer& server) {
  auto sub = peer.read_frame(3000ms);
  if (!sub || t::as_subscribe(*sub) == nullptr) {
    server.fail("expected Subscribe");
    return std::nullopt;
  }
  return sub;
}

bool accept_subscribe(t::FakePeer& peer, t::FakeServer& server,
                      wire::CommandStatus status = wire::CommandStatus::Accepted,
                      wire::RejectReason reason = wire::RejectReason::None) {
  const auto sub = read_subscribe(peer, server);
  return sub && peer.write(t::framed(t::command_result_payload(t::as_subscribe(*sub)->request_id(),
                                                               status, reason)));
}

const wire::Command* as_command(const std::vector<std::uint8_t>& payload) {
  std::string error;
  const auto* root = bustle::proto::verify_client_frame(payload, error);
  return root == nullptr ? nullptr : root->message_as_Command();
}

}  // namespace

TEST_CASE("Connection to a closed port reports Refused", "[connection]") {
  c::Connection conn;
  const auto r = conn.connect("127.0.0.1", t::closed_port(), 2000ms);
  CHECK(r.status == c::ConnectStatus::Refused);
  CHECK(r.message.find("refused") != std::string::npos);
  CHECK_FALSE(conn.is_open());
  CHECK(conn.read_frame(10ms).status == c::ReceiveStatus::NotConnected);
  CHECK(conn.send(std::vector<std::uint8_t>{1, 2, 3, 4, 5}, 10ms).status ==
        c::SendStatus::NotConnected);
}

TEST_CASE("Connection reassembles frames written in pieces and in batches", "[connection]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) {
    const auto first = delta_frame(1, true);
    for (std::uint8_t b : first) {  // one byte per write
      peer.write(std::span<const std::uint8_t>(&b, 1));
      std::this_thread::sleep_for(1ms);
    }
    std::vector<std::uint8_t> batch;  // three frames in one write
    for (std::uint64_t s = 2; s <= 4; ++s) {
      const auto f = delta_frame(s);
      batch.insert(batch.end(), f.begin(), f.end());
    }
    peer.write(batch);
    peer.wait_for_eof(3000ms);
  });
  c::Connection conn;
  REQUIRE(conn.connect("127.0.0.1", server.port(), 2000ms).ok());
  for (std::uint64_t step = 1; step <= 4; ++step) {
    const auto r = conn.read_frame(3000ms);
    INFO(r.message);
    REQUIRE(r.status == c::ReceiveStatus::Frame);
    REQUIRE(r.frame->message_as_Delta() != nullptr);
    CHECK(r.frame->message_as_Delta()->step() == step);
  }
  conn.close();
  check_no_failures(server);
}

TEST_CASE("Connection read timeout keeps the connection and partial bytes", "[connection]") {
  std::atomic<bool> may_finish{false};
  t::FakeServer server([&](t::FakePeer& peer, t::FakeServer& s) {
    const auto f = delta_frame(5);
    peer.write(std::span<const std::uint8_t>(f).first(7));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!may_finish && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(2ms);
    }
    if (!may_finish) s.fail("test never asked for the rest of the frame");
    peer.write(std::span<const std::uint8_t>(f).subspan(7));
    peer.wait_for_eof(3000ms);
  });
  c::Connection conn;
  REQUIRE(conn.connect("127.0.0.1", server.port(), 2000ms).ok());
  const auto start = std::chrono::steady_clock::now();
  const auto r1 = conn.read_frame(150ms);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(r1.status == c::ReceiveStatus::Timeout);
  CHECK(waited >= 140ms);
  CHECK(waited < 2s);
  CHECK(conn.is_open());
  CHECK(conn.read_frame(0ms).status == c::ReceiveStatus::Timeout);
  may_finish = true;
  const auto r2 = conn.read_frame(3000ms);
  REQUIRE(r2.status == c::ReceiveStatus::Frame);
  CHECK(r2.frame->message_as_Delta()->step() == 5);
  conn.close();
  check_no_failures(server);
}

TEST_CASE("Connection hands out buffered frames before reporting EOF", "[connection]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) {
    auto bytes = delta_frame(1);
    const auto second = delta_frame(2);
    bytes.insert(bytes.end(), second.begin(), second.end());
    peer.write(bytes);
    peer.close_now();
  });
  c::Connection conn;
  REQUIRE(conn.connect("127.0.0.1", server.port(), 2000ms).ok());
  CHECK(conn.read_frame(3000ms).status == c::ReceiveStatus::Frame);
  CHECK(conn.read_frame(3000ms).status == c::ReceiveStatus::Frame);
  const auto r = conn.read_frame(3000ms);
  CHECK(r.status == c::ReceiveStatus::Eof);
  CHECK_FALSE(conn.is_open());
  check_no_failures(server);
}

TEST_CASE("Connection closes on an oversize or malformed frame", "[connection]") {
  SECTION("oversize length prefix") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
      const std::uint32_t n = bustle::proto::kServerFrameMaxBytes + 1;
      const std::uint8_t prefix[4] = {
          static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8),
          static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 24)};
      peer.write(prefix);
      if (!peer.wait_for_eof(3000ms)) s.fail("client did not close after an oversize prefix");
    });
    c::Connection conn;
    REQUIRE(conn.connect("127.0.0.1", server.port(), 2000ms).ok());
    const auto r = conn.read_frame(3000ms);
    CHECK(r.status == c::ReceiveStatus::FrameTooLarge);
    CHECK_FALSE(conn.is_open());
    check_no_failures(server);
  }
  SECTION("garbage payload") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
      std::vector<std::uint8_t> bytes = {16, 0, 0, 0};
      for (int i = 0; i < 16; ++i) bytes.push_back(0xee);
      peer.write(bytes);
      if (!peer.wait_for_eof(3000ms)) s.fail("client did not close after a malformed frame");
    });
    c::Connection conn;
    REQUIRE(conn.connect("127.0.0.1", server.port(), 2000ms).ok());
    const auto r = conn.read_frame(3000ms);
    CHECK(r.status == c::ReceiveStatus::Malformed);
    CHECK_FALSE(r.message.empty());
    CHECK_FALSE(conn.is_open());
    check_no_failures(server);
  }
}

TEST_CASE("Client handshake: Welcome, Error, or an unexpected frame", "[client]") {
  SECTION("Welcome") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
      accept_hello(peer, s, wire::Role::Operator);
      peer.wait_for_eof(3000ms);
    });
    c::ClientOptions o;
    o.port = server.port();
    o.role = wire::Role::Operator;
    c::Client client(o);
    const auto r = client.connect();
    INFO(r.message);
    REQUIRE(r.ok());
    CHECK(r.value.role == wire::Role::Operator);
    CHECK(r.value.current_step == 10);
    CHECK(r.value.step_us == 100000);
    CHECK(r.value.clock_mode == wire::ClockMode::Manual);
    CHECK(r.value.server_version == "test-server 0");
    CHECK(client.connected());
    client.close();
    check_no_failures(server);
  }
  SECTION("Error") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) {
      peer.read_frame(3000ms);
      peer.write(t::framed(t::error_payload(wire::ErrorCode::Unauthorized, "bad token")));
      peer.close_now();
    });
    c::ClientOptions o;
    o.port = server.port();
    c::Client client(o);
    const auto r = client.connect();
    CHECK(r.status == c::ClientStatus::ServerError);
    REQUIRE(r.server_error.has_value());
    CHECK(r.server_error->code == wire::ErrorCode::Unauthorized);
    CHECK(r.server_error->message == "bad token");
    CHECK(r.message.find("Unauthorized") != std::string::npos);
    CHECK_FALSE(client.connected());
    check_no_failures(server);
  }
  SECTION("a Delta before Welcome") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) {
      peer.read_frame(3000ms);
      peer.write(delta_frame(1));
      peer.wait_for_eof(3000ms);
    });
    c::ClientOptions o;
    o.port = server.port();
    c::Client client(o);
    const auto r = client.connect();
    CHECK(r.status == c::ClientStatus::ProtocolError);
    CHECK(r.message.find("Delta") != std::string::npos);
    CHECK_FALSE(client.connected());
    check_no_failures(server);
  }
  SECTION("a Welcome with another protocol version") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) {
      peer.read_frame(3000ms);
      peer.write(t::framed(
          t::welcome_payload(0, wire::Role::Viewer, bustle::proto::kProtocolVersion + 1)));
      peer.wait_for_eof(3000ms);
    });
    c::ClientOptions o;
    o.port = server.port();
    c::Client client(o);
    CHECK(client.connect().status == c::ClientStatus::ProtocolError);
    check_no_failures(server);
  }
  SECTION("no answer") {
    t::FakeServer server([](t::FakePeer& peer, t::FakeServer&) { peer.wait_for_eof(3000ms); });
    c::ClientOptions o;
    o.port = server.port();
    o.handshake_timeout = 100ms;
    c::Client client(o);
    const auto r = client.connect();
    CHECK(r.status == c::ClientStatus::Timeout);
    CHECK_FALSE(client.connected());
    check_no_failures(server);
  }
  SECTION("nobody listening") {
    c::ClientOptions o;
    o.port = t::closed_port();
    c::Client client(o);
    const auto r = client.connect();
    CHECK(r.status == c::ClientStatus::ConnectFailed);
    CHECK(r.message.find("refused") != std::string::npos);
  }
}

TEST_CASE("Client command waits for its own result and buffers Deltas meanwhile", "[client]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    if (!accept_subscribe(peer, s)) return;
    peer.write(delta_frame(11, true));
    const auto cmd_payload = peer.read_frame(3000ms);
    const wire::Command* cmd = cmd_payload ? as_command(*cmd_payload) : nullptr;
    if (cmd == nullptr || cmd->body_as_QueryStats() == nullptr) {
      s.fail("expected a QueryStats command");
      return;
    }
    peer.write(delta_frame(12));
    peer.write(t::framed(t::command_result_payload(cmd->request_id() + 100)));  // stray
    peer.write(delta_frame(13));
    peer.write(t::framed(t::command_result_payload(cmd->request_id(), wire::CommandStatus::Accepted,
                                                   wire::RejectReason::None, 13, true)));
    peer.write(delta_frame(14));
    // Second command: rejected.
    const auto cmd2_payload = peer.read_frame(3000ms);
    const wire::Command* cmd2 = cmd2_payload ? as_command(*cmd2_payload) : nullptr;
    if (cmd2 == nullptr || cmd2->body_as_Step() == nullptr || cmd2->body_as_Step()->count() != 3) {
      s.fail("expected Step 3");
      return;
    }
    if (cmd2->request_id() == cmd->request_id()) s.fail("request id reused");
    peer.write(
        t::framed(t::command_result_payload(cmd2->request_id(), wire::CommandStatus::Rejected,
                                            wire::RejectReason::WrongClockMode, 14)));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  REQUIRE(client.subscribe().ok());

  const auto first = client.next_delta(3000ms);
  REQUIRE(first.ok());
  CHECK(first.value.baseline);
  CHECK(first.value.step == 11);

  const auto stats = client.command(c::QueryStatsCmd{}, 3000ms);
  INFO(stats.message);
  REQUIRE(stats.ok());
  CHECK(stats.value.accepted());
  CHECK(stats.value.request_id == client.last_request_id());
  CHECK(stats.value.applied_step == 13);
  REQUIRE(stats.value.stats.has_value());
  CHECK(stats.value.stats->pedestrians == 12);
  CHECK(stats.value.stats->entity_capacity == 1024);
  CHECK(client.stray_results() == 1);
  CHECK(client.buffered_deltas() == 2);

  // Buffered Deltas come out first, in order, then the live stream continues.
  for (std::uint64_t step : {12u, 13u, 14u}) {
    const auto d = client.next_delta(3000ms);
    REQUIRE(d.ok());
    CHECK(d.value.step == step);
  }

  const auto step = client.command(c::StepCmd{3}, 3000ms);
  REQUIRE(step.ok());
  CHECK_FALSE(step.value.accepted());
  CHECK(step.value.reason == wire::RejectReason::WrongClockMode);

  const auto none = client.next_delta(50ms);
  CHECK(none.status == c::ClientStatus::Timeout);
  CHECK(client.connected());
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client command stops with BacklogFull instead of dropping Deltas", "[client]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    if (!peer.read_frame(3000ms)) s.fail("expected a command");
    for (std::uint64_t step = 1; step <= 5; ++step) peer.write(delta_frame(step));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  o.max_buffered_deltas = 3;
  c::Client client(o);
  REQUIRE(client.connect().ok());
  const auto r = client.command(c::PauseCmd{}, 3000ms);
  CHECK(r.status == c::ClientStatus::BacklogFull);
  CHECK(client.buffered_deltas() == 3);
  CHECK(client.connected());
  for (std::uint64_t step = 1; step <= 5; ++step) {
    const auto d = client.next_delta(3000ms);
    REQUIRE(d.ok());
    CHECK(d.value.step == step);
  }
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client reports a server Error frame mid-stream and closes", "[client]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    peer.write(delta_frame(1, true));
    peer.write(t::framed(t::error_payload(wire::ErrorCode::ServerShuttingDown, "bye")));
    peer.close_now();
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  CHECK(client.next_delta(3000ms).ok());
  const auto r = client.next_delta(3000ms);
  CHECK(r.status == c::ClientStatus::ServerError);
  REQUIRE(r.server_error.has_value());
  CHECK(r.server_error->code == wire::ErrorCode::ServerShuttingDown);
  CHECK_FALSE(client.connected());
  CHECK(client.next_delta(10ms).status == c::ClientStatus::NotConnected);
  CHECK(client.command(c::PauseCmd{}, 10ms).status == c::ClientStatus::NotConnected);
  check_no_failures(server);
}

TEST_CASE("Client keeps results of outstanding requests that arrive out of order", "[client]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    const auto a = peer.read_frame(3000ms);
    const auto b = peer.read_frame(3000ms);
    const wire::Command* ca = a ? as_command(*a) : nullptr;
    const wire::Command* cb = b ? as_command(*b) : nullptr;
    if (ca == nullptr || cb == nullptr) {
      s.fail("expected two commands");
      return;
    }
    // Answer the second first (like a world command answered at the next
    // step after an immediate one), with a Delta in between.
    peer.write(t::framed(t::command_result_payload(cb->request_id(), wire::CommandStatus::Accepted,
                                                   wire::RejectReason::None, 21)));
    peer.write(delta_frame(21));
    peer.write(t::framed(t::command_result_payload(ca->request_id(), wire::CommandStatus::Accepted,
                                                   wire::RejectReason::None, 22)));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  o.max_outstanding_commands = 2;
  c::Client client(o);
  REQUIRE(client.connect().ok());
  const auto despawn = client.send_command(c::DespawnEntityCmd{{1, 1}});
  REQUIRE(despawn.ok());
  const auto step = client.send_command(c::StepCmd{1});
  REQUIRE(step.ok());
  CHECK(step.value != despawn.value);
  CHECK(client.outstanding_commands() == 2);
  CHECK(client.send_command(c::PauseCmd{}).status == c::ClientStatus::BacklogFull);
  CHECK(client.connected());

  const auto first = client.wait_result(despawn.value, 3000ms);
  INFO(first.message);
  REQUIRE(first.ok());
  CHECK(first.value.request_id == despawn.value);
  CHECK(first.value.applied_step == 22);
  CHECK(client.outstanding_commands() == 1);  // the step's result is kept
  const auto second = client.wait_result(step.value, 10ms);
  REQUIRE(second.ok());
  CHECK(second.value.applied_step == 21);
  CHECK(client.outstanding_commands() == 0);
  CHECK(client.stray_results() == 0);
  CHECK(client.buffered_deltas() == 1);
  CHECK(client.wait_result(step.value, 10ms).status == c::ClientStatus::UnknownRequest);
  CHECK(client.connected());
  client.close();
  check_no_failures(server);
}

namespace {

std::vector<std::uint8_t> job_update_frame(std::uint64_t job_id, wire::JobKind kind,
                                           wire::JobState state, bool terminal,
                                           const std::string& message = "") {
  return t::framed(t::job_update_payload({job_id, kind, state, terminal, "x", 10, message}));
}

std::vector<std::uint8_t> job_result_frame(std::uint32_t request_id, std::uint64_t job_id,
                                           wire::JobKind kind, wire::JobState state) {
  t::ResultSpec r;
  r.request_id = request_id;
  r.applied_step = 10;
  r.job = t::JobSpec{job_id, kind, state, false, "x", 10, ""};
  return t::framed(t::result_payload(r));
}

std::vector<wire::JobState> states_of(const std::vector<c::JobInfo>& jobs) {
  std::vector<wire::JobState> out;
  for (const auto& j : jobs) out.push_back(j.state);
  return out;
}

}  // namespace

TEST_CASE("Client keeps JobUpdates (even ones before their result) and hands them out per job",
          "[client][snapshots]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    const auto a = peer.read_frame(3000ms);
    const wire::Command* ca = a ? as_command(*a) : nullptr;
    if (ca == nullptr || ca->body_as_Checkpoint() == nullptr ||
        ca->body_as_Checkpoint()->name()->str() != "x") {
      s.fail("expected Checkpoint x");
      return;
    }
    // The persistence thread can finish before the sim thread's answer.
    peer.write(job_update_frame(5, wire::JobKind::Checkpoint, wire::JobState::Committed, true));
    peer.write(delta_frame(1));
    peer.write(
        job_result_frame(ca->request_id(), 5, wire::JobKind::Checkpoint, wire::JobState::Copied));
    const auto b = peer.read_frame(3000ms);
    const wire::Command* cb = b ? as_command(*b) : nullptr;
    if (cb == nullptr || cb->body_as_Restore() == nullptr) {
      s.fail("expected Restore");
      return;
    }
    peer.write(
        job_result_frame(cb->request_id(), 6, wire::JobKind::Restore, wire::JobState::Queued));
    peer.write(job_update_frame(7, wire::JobKind::Save, wire::JobState::Committed, true));
    peer.write(delta_frame(2));
    peer.write(job_update_frame(6, wire::JobKind::Restore, wire::JobState::Validated, false));
    peer.write(job_update_frame(6, wire::JobKind::Restore, wire::JobState::Applied, true));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());

  const auto cp = client.command(c::CheckpointCmd{"x"}, 3000ms);
  INFO(cp.message);
  REQUIRE(cp.ok());
  CHECK(cp.value.accepted());
  REQUIRE(cp.value.job.has_value());
  CHECK(cp.value.job->job_id == 5);
  CHECK(cp.value.job->state == wire::JobState::Copied);
  CHECK(client.buffered_job_updates() == 1);
  CHECK(client.buffered_deltas() == 1);
  const auto cp_states = client.wait_job(5, 3000ms);
  INFO(cp_states.message);
  REQUIRE(cp_states.ok());
  CHECK(states_of(cp_states.value) == std::vector<wire::JobState>{wire::JobState::Committed});
  CHECK(cp_states.value.back().succeeded());
  CHECK(client.buffered_job_updates() == 0);

  const auto rs = client.command(c::RestoreCmd{"x"}, 3000ms);
  REQUIRE(rs.ok());
  REQUIRE(rs.value.job.has_value());
  CHECK(rs.value.job->job_id == 6);
  const auto rs_states = client.wait_job(6, 3000ms);
  INFO(rs_states.message);
  REQUIRE(rs_states.ok());
  CHECK(states_of(rs_states.value) ==
        std::vector<wire::JobState>{wire::JobState::Validated, wire::JobState::Applied});
  CHECK(rs_states.value.back().terminal);
  // Job 7's update waited in the buffer; both Deltas are still deliverable.
  CHECK(client.buffered_job_updates() == 1);
  const auto other = client.next_job_update(7, 10ms);
  REQUIRE(other.ok());
  CHECK(other.value.kind == wire::JobKind::Save);
  CHECK(other.value.state == wire::JobState::Committed);
  for (std::uint64_t step : {1u, 2u}) {
    const auto d = client.next_delta(3000ms);
    REQUIRE(d.ok());
    CHECK(d.value.step == step);
  }
  // A job with nothing more to say times out and keeps the connection.
  const auto none = client.wait_job(6, 50ms);
  CHECK(none.status == c::ClientStatus::Timeout);
  CHECK(none.value.empty());
  CHECK(client.connected());
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client wait_job returns the states so far on timeout", "[client][snapshots]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    peer.write(job_update_frame(8, wire::JobKind::Load, wire::JobState::Validated, false));
    peer.write(job_update_frame(8, wire::JobKind::Load, wire::JobState::SnapshotApplied, false));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  const auto r = client.wait_job(8, 300ms);
  CHECK(r.status == c::ClientStatus::Timeout);
  CHECK(states_of(r.value) ==
        std::vector<wire::JobState>{wire::JobState::Validated, wire::JobState::SnapshotApplied});
  INFO(r.message);
  CHECK(r.message.find("SnapshotApplied") != std::string::npos);
  CHECK(client.connected());
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client stops with BacklogFull instead of dropping JobUpdates", "[client][snapshots]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    peer.write(job_update_frame(1, wire::JobKind::Load, wire::JobState::Validated, false));
    peer.write(job_update_frame(2, wire::JobKind::Save, wire::JobState::Committed, true));
    peer.write(job_update_frame(1, wire::JobKind::Load, wire::JobState::Failed, true, "bad row"));
    peer.write(delta_frame(5));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  o.max_buffered_job_updates = 2;
  c::Client client(o);
  REQUIRE(client.connect().ok());
  auto d = client.next_delta(3000ms);
  CHECK(d.status == c::ClientStatus::BacklogFull);
  CHECK(client.buffered_job_updates() == 2);
  CHECK(client.connected());
  CHECK(client.discard_job_updates(2) == 1);
  CHECK(client.discard_job_updates(2) == 0);
  d = client.next_delta(3000ms);
  CHECK(d.status == c::ClientStatus::BacklogFull);  // job 1's failure filled it again
  const auto job = client.wait_job(1, 3000ms);
  INFO(job.message);
  REQUIRE(job.ok());
  CHECK(states_of(job.value) ==
        std::vector<wire::JobState>{wire::JobState::Validated, wire::JobState::Failed});
  CHECK(job.value.back().message == "bad row");
  d = client.next_delta(3000ms);
  REQUIRE(d.ok());
  CHECK(d.value.step == 5);
  client.close();
  check_no_failures(server);
}

namespace {

std::vector<std::uint8_t> spawn_update_frame(std::uint64_t handle, wire::SpawnState state,
                                             bool terminal = false) {
  return t::framed(t::spawn_update_payload({handle, state, terminal, wire::EntityId(4, 1), ""}));
}

}  // namespace

TEST_CASE("Client keeps SpawnUpdates per handle and waits for a state", "[client][population]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    const auto a = peer.read_frame(3000ms);
    const wire::Command* ca = a ? as_command(*a) : nullptr;
    if (ca == nullptr || ca->body_as_SpawnPedestrian() == nullptr) {
      s.fail("expected SpawnPedestrian");
      return;
    }
    // The handle's first states can arrive right behind (or before) the result.
    peer.write(spawn_update_frame(3, wire::SpawnState::Queued));
    flatbuffers::FlatBufferBuilder fbb;
    wire::CommandResultBuilder rb(fbb);
    rb.add_request_id(ca->request_id());
    rb.add_handle(3);
    const auto result =
        t::finish_server(fbb, wire::ServerMessage::CommandResult, rb.Finish().Union());
    peer.write(t::framed(result));
    peer.write(spawn_update_frame(9, wire::SpawnState::TimedOut, true));
    peer.write(delta_frame(1));
    peer.write(spawn_update_frame(3, wire::SpawnState::IdentityCreated));
    peer.write(spawn_update_frame(3, wire::SpawnState::Registered));
    peer.write(spawn_update_frame(3, wire::SpawnState::RepresentationRequested));
    peer.write(spawn_update_frame(3, wire::SpawnState::Attached));
    // Unread updates fill their buffer: the reader stops instead of dropping.
    for (int i = 0; i < 3; ++i) peer.write(spawn_update_frame(5, wire::SpawnState::Queued));
    peer.write(delta_frame(2));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  o.max_buffered_spawn_updates = 3;
  c::Client client(o);
  REQUIRE(client.connect().ok());
  const auto r = client.command(c::SpawnPedestrianCmd{}, 3000ms);
  INFO(r.message);
  REQUIRE(r.ok());
  CHECK(r.value.handle == 3);
  CHECK(client.buffered_spawn_updates() == 1);

  const auto states = client.wait_spawn(3, wire::SpawnState::RepresentationRequested, 3000ms);
  INFO(states.message);
  REQUIRE(states.ok());
  std::vector<wire::SpawnState> seen;
  for (const auto& st : states.value) seen.push_back(st.state);
  CHECK(seen == std::vector<wire::SpawnState>{
                    wire::SpawnState::Queued, wire::SpawnState::IdentityCreated,
                    wire::SpawnState::Registered, wire::SpawnState::RepresentationRequested});
  CHECK(states.value.back().entity_id() == c::EntityId{4, 1});

  // The other handle's terminal update waited in the buffer; the Delta too.
  const auto other = client.next_spawn_update(9, 10ms);
  REQUIRE(other.ok());
  CHECK(other.value.terminal);
  CHECK(other.value.state == wire::SpawnState::TimedOut);
  const auto d = client.next_delta(3000ms);
  REQUIRE(d.ok());
  CHECK(d.value.step == 1);
  const auto attached = client.next_spawn_update(3, 3000ms);
  REQUIRE(attached.ok());
  CHECK(attached.value.state == wire::SpawnState::Attached);
  CHECK(client.discard_spawn_updates(3) == 0);

  auto full = client.next_delta(3000ms);
  CHECK(full.status == c::ClientStatus::BacklogFull);
  CHECK(client.buffered_spawn_updates() == 3);
  CHECK(client.connected());
  CHECK(client.discard_spawn_updates(5) == 3);
  full = client.next_delta(3000ms);
  REQUIRE(full.ok());
  CHECK(full.value.step == 2);
  const auto none = client.next_spawn_update(3, 50ms);
  CHECK(none.status == c::ClientStatus::Timeout);
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client subscribe waits for its result and keeps a Delta that arrives first",
          "[client][v2]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    const auto sub = read_subscribe(peer, s);
    if (!sub) return;
    const wire::Subscribe* subscribe = t::as_subscribe(*sub);
    if (subscribe->observers() == nullptr || subscribe->observers()->size() != 1 ||
        subscribe->observers()->Get(0)->radius_m() != 40.0 ||
        subscribe->motion_tolerance_mm() != 0) {
      s.fail("the Subscribe lost its observers or tolerance");
    }
    // The server's baseline overtakes the answer (different threads), and a
    // stray result for another id comes in between.
    peer.write(delta_frame(30, true));
    peer.write(t::framed(t::command_result_payload(subscribe->request_id() + 7)));
    peer.write(t::framed(t::command_result_payload(
        subscribe->request_id(), wire::CommandStatus::Accepted, wire::RejectReason::None, 30)));
    peer.write(delta_frame(31));
    // UpdateInterest: rejected, naming the field.
    const auto upd = peer.read_frame(3000ms);
    const wire::UpdateInterest* update = upd ? t::as_update_interest(*upd) : nullptr;
    if (update == nullptr) {
      s.fail("expected UpdateInterest");
      return;
    }
    t::ResultSpec rejected;
    rejected.request_id = update->request_id();
    rejected.status = wire::CommandStatus::Rejected;
    rejected.reason = wire::RejectReason::InvalidArgument;
    rejected.message = "observers[0].radius_m: 0 is not in (0, 100000]";
    peer.write(t::framed(t::result_payload(rejected)));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  c::SubscribeParams params;
  params.observers = {c::InterestObserver{1.0, 2.0, 0.0, std::nullopt, 40.0}};
  params.motion_tolerance_mm = 0;
  const auto sub = client.subscribe(params, 3000ms);
  INFO(sub.message);
  REQUIRE(sub.ok());
  CHECK(sub.value.accepted());
  CHECK(sub.value.request_id == client.last_request_id());
  CHECK(sub.value.applied_step == 30);
  CHECK(client.stray_results() == 1);
  CHECK(client.outstanding_commands() == 0);
  REQUIRE(client.buffered_deltas() == 1);  // the baseline that came first

  const auto baseline = client.next_delta(3000ms);
  REQUIRE(baseline.ok());
  CHECK(baseline.value.baseline);
  CHECK(baseline.value.step == 30);
  REQUIRE(baseline.value.entered.size() == 1);
  CHECK(baseline.value.entered[0].id == c::EntityId{30, 1});
  const auto next = client.next_delta(3000ms);
  REQUIRE(next.ok());
  CHECK(next.value.step == 31);

  c::UpdateInterestParams update;
  update.observers = {c::InterestObserver{0.0, 0.0, 0.0, std::nullopt, 0.0}};
  const auto rejected = client.update_interest(update, 3000ms);
  CHECK(rejected.status == c::ClientStatus::Rejected);
  CHECK_FALSE(rejected.ok());
  CHECK(rejected.value.reason == wire::RejectReason::InvalidArgument);
  CHECK(
      rejected.message ==
      "update_interest rejected (InvalidArgument): observers[0].radius_m: 0 is not in (0, 100000]");
  CHECK(client.connected());  // a rejection leaves the stream alone
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client subscribe times out without a result and forgets the request", "[client][v2]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    if (!read_subscribe(peer, s)) return;
    peer.write(delta_frame(1, true));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  const auto sub = client.subscribe({}, 200ms);
  CHECK(sub.status == c::ClientStatus::Timeout);
  CHECK(sub.message.find("subscribe") != std::string::npos);
  CHECK(client.outstanding_commands() == 0);
  CHECK(client.buffered_deltas() == 1);
  client.close();
  check_no_failures(server);
}

TEST_CASE("Client reports a Delta with malformed motion bytes as a protocol error",
          "[client][v2]") {
  t::FakeServer server([](t::FakePeer& peer, t::FakeServer& s) {
    if (!accept_hello(peer, s)) return;
    if (!accept_subscribe(peer, s)) return;
    peer.write(delta_frame(1, true));
    t::DeltaSpec bad;
    bad.step = 2;
    bad.motion_bytes =
        std::vector<std::uint8_t>{1, 0, 5, 5, 0x80};  // the second record is cut short
    peer.write(t::framed(t::delta_payload(bad)));
    peer.wait_for_eof(3000ms);
  });
  c::ClientOptions o;
  o.port = server.port();
  c::Client client(o);
  REQUIRE(client.connect().ok());
  REQUIRE(client.subscribe().ok());
  REQUIRE(client.next_delta(3000ms).ok());
  const auto r = client.next_delta(3000ms);
  CHECK(r.status == c::ClientStatus::ProtocolError);
  CHECK(r.message ==
        "undecodable Delta: motion[byte 4]: truncated or over-long varint (index delta)");
  CHECK_FALSE(client.connected());
  check_no_failures(server);
}
