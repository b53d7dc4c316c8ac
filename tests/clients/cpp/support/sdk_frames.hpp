// Test helpers on top of server_frames.hpp for tests that link the SDK:
// frames built like a server's, decoded into SDK types.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "bustle/client/stream.hpp"
#include "support/server_frames.hpp"

namespace bustle::test {

// The SDK Delta of a built Delta frame; throws (failing the test) when the
// frame does not verify or decode.
inline bustle::client::Delta decoded(const DeltaSpec& spec) {
  const std::vector<std::uint8_t> payload = delta_payload(spec);
  const wire::Delta* d = as_delta(payload);
  if (d == nullptr) throw std::runtime_error("the built Delta does not verify");
  bustle::client::Delta out;
  if (const std::string error = bustle::client::decode_delta(*d, out); !error.empty()) {
    throw std::runtime_error("the built Delta does not decode: " + error);
  }
  return out;
}

// The SDK Welcome of a built Welcome frame.
inline bustle::client::WelcomeInfo decoded(const WelcomeSpec& spec) {
  const std::vector<std::uint8_t> payload = welcome_payload(spec);
  std::string error;
  const auto* root = bustle::proto::verify_server_frame(payload, error);
  if (root == nullptr || root->message_as_Welcome() == nullptr) {
    throw std::runtime_error("the built Welcome does not verify: " + error);
  }
  return bustle::client::to_welcome_info(*root->message_as_Welcome());
}

// One lane, 1 km along +x, with `step_us` and `archetypes`: the smallest
// world the representation layer and the session draw in.
inline bustle::client::WelcomeInfo one_lane_world(std::uint32_t step_us,
                                                  std::vector<std::string> archetypes = {}) {
  WelcomeSpec w;
  w.step_us = step_us;
  w.lanes = {{"east", {{0.0, 0.0}, {1000.0, 0.0}}, 0.0f}};
  w.archetypes = std::move(archetypes);
  return decoded(w);
}

}  // namespace bustle::test
