#include "bustle/net/command_queue.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "bustle/net/server.hpp"

using namespace bustle;

namespace {
net::InboundCommand cmd(std::uint32_t request) {
  net::InboundCommand c;
  c.request_id = request;
  c.body = net::ControlCommand{net::ControlCommand::Kind::QueryStats, 0, {}, 0, {}};
  return c;
}
}  // namespace

TEST_CASE("the command queue is bounded, FIFO, and refuses pushes after close") {
  net::CommandQueue q(2);
  CHECK(q.try_push(cmd(1)));
  CHECK(q.try_push(cmd(2)));
  CHECK_FALSE(q.try_push(cmd(3)));
  CHECK(q.size() == 2);
  CHECK(q.try_pop()->request_id == 1);
  CHECK(q.try_pop()->request_id == 2);
  CHECK_FALSE(q.try_pop().has_value());
  q.close();
  CHECK(q.closed());
  CHECK_FALSE(q.try_push(cmd(4)));
}

TEST_CASE("wait_until returns on push from another thread and on deadline") {
  net::CommandQueue q(4);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(q.wait_until(t0 + std::chrono::milliseconds(20)));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20));
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    q.try_push(cmd(7));
  });
  CHECK(q.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  producer.join();
  CHECK(q.try_pop()->request_id == 7);
}

TEST_CASE("bind policy: loopback is always allowed, anything else needs a token") {
  net::ServerOptions o;
  o.bind_address = "127.0.0.1";
  CHECK(net::check_bind_policy(o).ok());
  o.bind_address = "::1";
  CHECK(net::check_bind_policy(o).ok());
  o.bind_address = "0.0.0.0";
  CHECK(net::check_bind_policy(o).code() == core::StatusCode::FailedPrecondition);
  CHECK(net::check_bind_policy(o).message().find("without a token") != std::string::npos);
  o.token = "secret";
  CHECK(net::check_bind_policy(o).ok());
  o.bind_address = "not-an-address";
  CHECK(net::check_bind_policy(o).code() == core::StatusCode::InvalidArgument);
  CHECK(net::check_bind_policy(o).message().find("invalid bind address") != std::string::npos);
}
