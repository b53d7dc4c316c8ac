// --agones: reports to the Agones SDK sidecar through its local HTTP REST
// API (http://127.0.0.1:$AGONES_SDK_HTTP_PORT, default 9358) with libcurl,
// on a thread of its own (never the sim thread):
//
//   POST /ready     once, when the server is ready (the readiness check
//                   passes: scenario loaded, listening, no restore in flight);
//   POST /health    every `health_period` while /healthz would answer 200
//                   (a stalled sim thread stops the pings, so Agones marks
//                   the game server Unhealthy);
//   POST /shutdown  once, when the server shuts down.
//
// Every request has a JSON body "{}" and a 2 s timeout; a failed request is
// logged (at most once per kind until one succeeds) and retried on the next
// period, never fatal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "bustle/core/status.hpp"

namespace bustle::ops {

struct AgonesSettings {
  std::string base_url;  // "http://127.0.0.1:9358"
  std::chrono::milliseconds health_period{2000};
  bool ready_sent = false;  // Ready went out already (agones_wait_for_district): never again
};

// One request to the sidecar (base_url + path): Ok on a 2xx answer, else
// Unavailable saying what it answered. GET returns the body.
core::Status agones_post(const std::string& base_url, const std::string& path);
core::StatusOr<std::string> agones_get(const std::string& base_url, const std::string& path);

// A district GameServer of a Fleet (--agones-district, docs/districts.md):
// the district and its peers come with the allocation, as the label
// bustle.dev/district and the annotation bustle.dev/district-peers
// ("ID=HOST:PORT,...", absent for a district that dials nobody).
inline constexpr const char* kAgonesDistrictLabel = "bustle.dev/district";
inline constexpr const char* kAgonesPeersAnnotation = "bustle.dev/district-peers";
struct AgonesDistrict {
  std::string district;
  std::string peers;
};
// Sends Ready, then reads GET /gameserver every `period` (sending Health
// meanwhile, so the waiting server stays Healthy) until the label is there.
// Returns when it is, or an error when the sidecar's answer is not a
// GameServer. Blocks the calling thread (start-up, before anything runs).
core::StatusOr<AgonesDistrict> agones_wait_for_district(const std::string& base_url,
                                                        std::chrono::milliseconds period);

// The sidecar's address from AGONES_SDK_HTTP_PORT (value of `env_port`, null
// when unset: the SDK's default port), or InvalidArgument naming the variable.
core::StatusOr<std::string> agones_base_url(const char* env_port);

class AgonesClient {
 public:
  AgonesClient(AgonesSettings settings, std::function<bool()> ready, std::function<bool()> healthy);
  ~AgonesClient();  // stop() if not called
  AgonesClient(const AgonesClient&) = delete;
  AgonesClient& operator=(const AgonesClient&) = delete;

  // Sends /shutdown (once) and joins the thread. Bounded by the request timeout.
  void stop();

  // One POST to base_url + path: Ok on a 2xx answer, else Unavailable saying
  // what the sidecar answered. Thread-safe.
  core::Status post(const std::string& path) const;

 private:
  void run();

  AgonesSettings settings_;
  std::function<bool()> ready_;
  std::function<bool()> healthy_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace bustle::ops
