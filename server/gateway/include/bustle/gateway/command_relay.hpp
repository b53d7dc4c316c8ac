// CommandRelay: the gateway's command connection to one district server.
//
// A command a gateway client sends about an entity or a lane is answered by
// the district that owns it: the gateway keeps the command as received
// (net::ServerOptions::keep_wire_commands), and the relay of that district
// sends it on its own connection (operator role, the district token) with
// a request id of its own, waits for the district's CommandResult and hands
// it back to the client's session unchanged but for the request id
// (net::OutboundResult::forwarded). One thread per district, one command at
// a time, in the order they came; the queue holds kRelayDepth commands.
//
// A district that cannot be reached, or does not answer within
// kRelayAnswerWait, gets the command answered Rejected InboxFull with what
// happened ("try again"); the next command connects anew. Pushed updates
// (JobUpdate, SpawnUpdate) on the relay's connection are not relayed.
//
// A job with `done` set is one district's part of a command the gateway
// sends to every district (Pause, Resume): its answer, or the refusal,
// goes to `done` instead of the client, which hears once all have answered.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "bustle/gateway/district_feed.hpp"
#include "bustle/net/server.hpp"

namespace bustle::client {
class Client;
}

namespace bustle::gateway {

inline constexpr std::size_t kRelayDepth = 256;
inline constexpr auto kRelayAnswerWait = std::chrono::seconds(5);

class CommandRelay {
 public:
  struct Job {
    std::uint32_t session_id = 0;
    std::uint32_t request_id = 0;
    std::shared_ptr<wire::CommandT> command;
    // When set, the answer goes here (relay thread) instead of the session.
    std::function<void(net::OutboundResult)> done;
  };

  CommandRelay(FeedSettings settings, net::Server& server);
  ~CommandRelay();
  CommandRelay(const CommandRelay&) = delete;
  CommandRelay& operator=(const CommandRelay&) = delete;

  void start();
  void stop();  // joins; queued commands are answered ShuttingDown
  // Queues `job`; false when kRelayDepth commands wait already.
  bool submit(Job job);

 private:
  void run();
  void relay(Job& job);
  // "" once connected, else why not.
  std::string connect();
  void answer_rejected(const Job& job, core::RejectReason reason, std::string message);
  void answer(const Job& job, net::OutboundResult result);

  const FeedSettings settings_;
  net::Server& server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::unique_ptr<client::Client> client_;  // handshake; then its connection is used raw
  std::uint32_t next_request_id_ = 1;
  std::thread thread_;
};

}  // namespace bustle::gateway
