// The hand-off from network threads to the sim thread.
//
// Network callbacks only parse, verify and push here; the sim thread pops at
// its own pace (TigerBeetle: do not act directly on external events). The
// queue is bounded: a push to a full queue fails and the caller answers the
// client with InboxFull at once, so overload is visible and nothing is lost
// silently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bustle/core/command.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::net {

enum class Role : std::uint8_t { Viewer = 0, Operator = 1 };

// Commands handled by the sim thread's driver, outside the world: clock
// control, snapshot jobs, and the queries answered from the current state.
// The most executed steps Stats' step timing covers (QueryStats.step_time_window).
inline constexpr std::uint32_t kStepTimeWindowMax = 1024;

struct ControlCommand {
  enum class Kind : std::uint8_t {
    Pause,
    Resume,
    Step,
    QueryStats,
    Checkpoint,
    Restore,
    Save,
    Load,
    ListSnapshots,
    DeleteSnapshot,
    QueryJob,
    QueryGarages,
    QuerySignals,
    QueryVehicle,
    QueryZones,
    QueryEntity,
    QueryPopulation,
    QuerySpawn,
    // Representation axis (sim driver, never the World): a client holds an
    // actor for a spawned entity (the ReportAttached shorthand, answered).
    ReportAttached,
    // Internal notices from the network side (request_id 0, never answered):
    // entities some client's lease says it holds a representation of (only
    // those in the latest frame's awaiting_representation), and a session's
    // observers (Subscribe / UpdateInterest; empty when it left).
    LeasesHeld,
    ClientObservers,
  };
  Kind kind = Kind::QueryStats;
  std::uint32_t step_count = 0;                  // Step
  std::string name;                              // snapshot commands
  std::uint64_t job_id = 0;                      // QueryJob
  core::EntityId entity;                         // QueryVehicle, QueryEntity
  std::uint64_t spawn_handle = 0;                // QuerySpawn
  std::vector<core::EntityId> entities{};        // LeasesHeld
  std::vector<core::ObserverPoint> observers{};  // ClientObservers
  std::uint32_t step_time_window = 0;            // QueryStats (0: kStepTimeWindowMax)
};

struct InboundCommand {
  std::uint32_t session_id = 0;
  std::uint32_t request_id = 0;
  Role role = Role::Viewer;
  std::variant<ControlCommand, core::WorldCommand> body;
  // The command as the client sent it, with ServerOptions::keep_wire_commands
  // only (null otherwise): what a gateway forwards to the district server
  // that owns the command's target.
  std::shared_ptr<wire::CommandT> wire;
};

class CommandQueue {
 public:
  // [Limit: capacity >= 1]
  explicit CommandQueue(std::size_t capacity) : capacity_(capacity) {}

  // False when full or closed; never blocks.
  bool try_push(InboundCommand cmd);
  // The network side's own notices (LeasesHeld, ClientObservers): never
  // refused for capacity, because losing one would leave the sim thread
  // wrong; they are bounded by what produces them (rate-limited Subscribe /
  // UpdateInterest, disconnects, leases of awaited entities). False only
  // when closed.
  bool push_internal(InboundCommand cmd);

  // Pops one command if any (never blocks).
  std::optional<InboundCommand> try_pop();

  // Waits until a command is available, the deadline passes, or close().
  // Returns true if a command is (probably) available.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  void wait();

  // Wakes a waiter without a command (e.g. a restore candidate is ready).
  void notify();

  // Wakes waiters and refuses further pushes (shutdown).
  void close();
  bool closed() const;
  std::size_t size() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<InboundCommand> items_;
  bool closed_ = false;
  bool notified_ = false;
};

}  // namespace bustle::net
