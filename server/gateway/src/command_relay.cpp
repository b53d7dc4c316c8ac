// CommandRelay (command_relay.hpp).
#include "bustle/gateway/command_relay.hpp"

#include <spdlog/spdlog.h>

#include "bustle/client/client.hpp"
#include "bustle/proto/framing.hpp"

namespace bustle::gateway {

namespace {

constexpr auto kSendWait = std::chrono::seconds(3);

std::vector<std::uint8_t> command_frame(const wire::CommandT& command) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto cmd = wire::Command::Pack(fbb, &command);
  wire::FinishClientFrameBuffer(
      fbb, wire::CreateClientFrame(fbb, wire::ClientMessage::Command, cmd.Union()));
  return proto::make_frame(fbb);
}

}  // namespace

CommandRelay::CommandRelay(FeedSettings settings, net::Server& server)
    : settings_(std::move(settings)), server_(server) {}

CommandRelay::~CommandRelay() {
  stop();
}

void CommandRelay::start() {
  thread_ = std::thread([this] { run(); });
}

void CommandRelay::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CommandRelay::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || jobs_.size() >= kRelayDepth) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void CommandRelay::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (stop_) {
        lock.unlock();
        answer_rejected(job, core::RejectReason::ShuttingDown, "the gateway is shutting down");
        continue;
      }
    }
    relay(job);
  }
}

std::string CommandRelay::connect() {
  if (client_ && client_->connected()) return {};
  client::ClientOptions o;
  o.host = settings_.host;
  o.port = settings_.port;
  o.token = settings_.token;
  o.client_name = "bustle-gateway-commands";
  o.role = wire::Role::Operator;  // the gateway checked its own client's role
  client_ = std::make_unique<client::Client>(o);
  const auto w = client_->connect();
  return w.ok() ? std::string() : w.message;
}

void CommandRelay::relay(Job& job) {
  const std::string where = "district '" + settings_.district + "' at " + settings_.host + ":" +
                            std::to_string(settings_.port);
  const auto fail = [&](const std::string& why) {
    if (client_) client_->close();
    spdlog::warn("{}: command {} of client {} not relayed: {}", where, job.request_id,
                 job.session_id, why);
    answer_rejected(job, core::RejectReason::InboxFull, where + ": " + why + "; try again");
  };
  if (std::string e = connect(); !e.empty()) return fail(e);
  const std::uint32_t upstream = next_request_id_++;
  job.command->request_id = upstream;
  client::Connection& c = client_->connection();
  if (auto s = c.send(command_frame(*job.command), kSendWait); !s.ok()) return fail(s.message);
  const auto deadline = std::chrono::steady_clock::now() + kRelayAnswerWait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return fail("no answer within 5 s");
    const client::ReceiveResult r = c.read_frame(left);
    if (r.status == client::ReceiveStatus::Timeout) continue;
    if (!r.ok()) return fail(r.message);
    const wire::CommandResult* result = r.frame->message_as_CommandResult();
    if (result == nullptr || result->request_id() != upstream) continue;  // pushes: not ours
    net::OutboundResult out;
    out.session_id = job.session_id;
    out.request_id = job.request_id;
    out.status = static_cast<core::CommandStatus>(result->status());
    out.forwarded.reset(result->UnPack());
    out.forwarded->request_id = job.request_id;
    answer(job, std::move(out));
    return;
  }
}

void CommandRelay::answer_rejected(const Job& job, core::RejectReason reason, std::string message) {
  net::OutboundResult r;
  r.session_id = job.session_id;
  r.request_id = job.request_id;
  r.status = core::CommandStatus::Rejected;
  r.reason = reason;
  r.message = std::move(message);
  answer(job, std::move(r));
}

void CommandRelay::answer(const Job& job, net::OutboundResult result) {
  if (job.done) {
    job.done(std::move(result));
  } else {
    server_.deliver_result(std::move(result));
  }
}

}  // namespace bustle::gateway
