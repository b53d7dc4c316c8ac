// Cities generated in code for benches and tests: the vehicle grid and the
// district city built on it (issue 34). They are scenarios like any file's:
// World::create validates them.
#pragma once

#include <cstdint>

#include "bustle/core/scenario.hpp"

namespace bustle::citygen {

// Entity capacity for n entities: a power of two, at least 1024, with 25 % headroom.
std::uint32_t capacity_for(std::uint32_t n);

// The vehicles-mode city (issue 4; the SUMO peer in sumo_grid.sh builds the
// same shape with netgenerate):
//   - N x N intersections 100 m apart; node (i, j) at (100 i, 100 j) m;
//   - between neighbours one road lane per direction, 100 m, 13.9 m/s, drawn
//     1.75 m right of the centre line; successors: every lane leaving the end
//     node except the U-turn;
//   - every lane ends at an intersection and carries a signal there: 10 s
//     cycle (4 s open, 1 s yield, 5 s closed); east/west approaches of a node
//     are half a cycle apart from its north/south approaches, and nodes are
//     staggered by ((3 i + 7 j) mod 10) s;
//   - one garage per block, entrance = the block's south edge eastbound,
//     route = the block counter-clockwise (east, north, west, south) with
//     route_end loop, so its vehicles circulate forever; counter-clockwise
//     loops use every directed lane at most once (the block on its left);
//   - V requests spread evenly over the garages by the content plan (all
//     offered on step 1); capacity = queue depth = that garage's share,
//     dispatch_per_step_max 1, cooldown 0, entrance_clear_m 1;
//   - one observer at the centre, Full radius beyond the city, full_cap = V:
//     every vehicle is Full (stride 1); no pedestrians.
// (src/grid_city.cpp)
bustle::core::Scenario grid_city(std::uint32_t n, std::uint32_t vehicles);

// The district city (issue 34): grid_city(n, vehicles) plus a sidewalk
// beside every road lane (5 m to its right, the same way; at a node a
// pedestrian may walk on in any direction but back), P pedestrians, every
// entity Full, and a district map of `districts` strips of node columns
// (column i in strip i x districts / n): each lane belongs to the strip of
// the node it leaves, garages and signals to their lane's, border lanes are
// those with a successor in another strip. Vehicles crossing a strip border
// circle the blocks that straddle it; pedestrians walk anywhere.
// [Precondition: 1 <= districts <= n] (src/district_city.cpp)
bustle::core::Scenario district_city(std::uint32_t n, std::uint32_t districts,
                                     std::uint32_t pedestrians, std::uint32_t vehicles);

}  // namespace bustle::citygen
