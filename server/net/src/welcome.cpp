// The Welcome a client receives after Hello, built once from the world: the
// scenario's geometry (lanes, chains, garages, signals), archetypes, and the
// static facts every stream tracker needs (StreamContext).
#include "bustle/net/server.hpp"

namespace bustle::net {

WelcomeInfo make_welcome_info(const core::World& world, std::string server_version,
                              ClockMode clock_mode) {
  const core::Scenario& scenario = world.scenario();
  std::vector<std::uint32_t> community_first;
  for (std::uint32_t c = 0; c < scenario.communities.size(); ++c)
    community_first.push_back(world.population().community_first(c));
  return make_welcome_info(scenario, world.lanes(), community_first, std::move(server_version),
                           clock_mode);
}

WelcomeInfo make_welcome_info(const core::Scenario& scenario, const core::LaneGraph& lanes,
                              std::span<const std::uint32_t> community_first,
                              std::string server_version, ClockMode clock_mode) {
  WelcomeInfo w;
  w.server_version = std::move(server_version);
  w.scenario_id = scenario.id;
  w.step_us = scenario.step_us;
  w.clock_mode = clock_mode;
  w.lanes = lanes.lanes();
  w.chains = lanes.chains();
  w.dots_every_steps = scenario.pedestrians.dots_every_steps;
  auto lane_index = [&](const std::string& id) { return lanes.find(id).value_or(0u); };
  for (const core::GarageSpec& g : scenario.garages) {
    GarageGeometry geo{g.id, lane_index(g.lane), {}};
    for (const std::string& l : g.route) geo.route.push_back(lane_index(l));
    w.garages.push_back(std::move(geo));
  }
  for (const core::SignalSpec& sg : scenario.signals) {
    w.signals.push_back({sg.id, lane_index(sg.lane), static_cast<float>(sg.stop_alpha),
                         static_cast<float>(sg.yield_alpha)});
  }
  w.archetypes = make_archetypes(scenario);
  StreamContext& ctx = w.stream;
  ctx.step_us = scenario.step_us;
  for (std::uint32_t l = 0; l < lanes.size(); ++l) {
    ctx.lane_length_mm.push_back(proto::to_mm(lanes.lane(l).length_m));
    ctx.lane_chain.push_back(lanes.chain_of(l));
  }
  ctx.chain_count = w.chains.size();
  ctx.importance = scenario.tiers.importance;
  for (const core::GarageSpec& g : scenario.garages) {
    ctx.garage_ids.push_back(g.id);
    ctx.vehicle_id_formats.push_back(g.vehicle_id_format);
  }
  ctx.scenario_id = scenario.id;
  for (std::uint32_t c = 0; c < scenario.communities.size(); ++c) {
    ctx.community_first_resident.push_back(community_first[c]);
    ctx.community_ids.push_back(scenario.communities[c].id);
  }
  return w;
}

}  // namespace bustle::net
