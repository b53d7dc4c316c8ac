// Consumes the installed SDK: one entity walks a lane, the representation
// layer interpolates it into the headless backend, its lease goes into a
// LeaseReport frame, and a Client is constructed (not connected) to show the
// transport links. Prints one line per check and exits 0 when all hold.
#include <cmath>
#include <cstdio>

#include "bustle/client/client.hpp"
#include "bustle/client/headless_backend.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/client/representation.hpp"

namespace c = bustle::client;

int main() {
  c::WelcomeInfo welcome;
  welcome.step_us = 100'000;
  c::LaneGeometry lane;
  lane.points = {{0.0, 0.0}, {100.0, 0.0}};
  lane.length_m = 100.0;
  lane.length_mm = 100'000;
  welcome.lanes = {lane};

  c::HeadlessBackend backend;  // before the layer: a backend outlives its installation
  c::RepresentationLayer layer;
  layer.set_world(welcome);
  if (layer.set_backend(c::RepresentationHint::Actor, &backend) != c::InstallStatus::Installed)
    return 1;

  c::Delta first;
  first.step = 1;
  first.sim_time_us = 100'000;
  first.baseline = true;
  c::EnteredEntity walker;
  walker.id = c::EntityId{7, 1};
  walker.speed_mmps = 2'000;  // 2 m/s along the lane
  first.entered = {walker};
  layer.apply(first, 0);
  c::Delta second;
  second.step = 2;
  second.sim_time_us = 200'000;
  layer.apply(second, 100'000);

  layer.render_at(150'000);  // half-way between the two samples
  const c::SlotId slot = layer.mirror().find(walker.id)->slot;
  const c::RenderPose* pose = backend.frame_pose(slot);
  if (pose == nullptr) return 2;
  const double x = pose->x_m;
  std::printf("interpolated x at 0.15 s: %.3f m\n", x);
  if (std::abs(x - 0.1) > 1e-9) return 2;

  const std::vector<c::Lease> leases = layer.take_leases();
  const c::Frame report = c::build_lease_report(1, leases);
  std::printf("lease report: %zu lease(s), %zu bytes, first %s\n", leases.size(), report.size(),
              leases.empty() ? "-" : c::to_string(leases.front().state));
  if (leases.size() != 1 || leases.front().state != c::LeaseState::Assigned) return 3;

  c::Client client(c::ClientOptions{});
  std::printf("transport linked, connected: %s\n", client.connected() ? "yes" : "no");
  std::printf("ok\n");
  return 0;
}
