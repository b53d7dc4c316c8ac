// The district city of `bustle-bench fanout --city-scale`: a generated grid
// of sidewalk loops written as a scenario file for the real server, and one
// interest district per client, sized so that each district holds a given
// share of the pedestrians.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bustle::bench {

struct District {
  double x_m = 0, y_m = 0;   // centre (also a scenario observer)
  double radius_m = 0;       // the client's interest radius
  double expected = 0;       // pedestrians expected within radius_m (uniform by sidewalk length)
  double expected_hold = 0;  // ... within 1.1 x radius_m (where a received entity may stay)
  // What a client of this district holds when the server applied its
  // interest: at least 0.8 x expected, at most 1.2 x expected_hold.
  double held_min() const { return 0.8 * expected; }
  double held_max() const { return 1.2 * expected_hold; }
  bool holds_its_share(double held) const { return held >= held_min() && held <= held_max(); }
};

// A district client's budgets (actors, instances, markers): large enough
// that its radius, not a budget, decides what it receives (a client whose
// interest the server ignored would receive up to their sum, several times
// its share).
inline constexpr std::uint32_t kDistrictActors = 4096;
inline constexpr std::uint32_t kDistrictInstances = 65536;
inline constexpr std::uint32_t kDistrictMarkers = 65536;

struct DistrictCity {
  std::string scenario_json;        // the scenario file's text
  std::vector<District> districts;  // one per client
  double sidewalk_m = 0;            // total sidewalk length
};

// kGrid x kGrid blocks, each one closed sidewalk loop (its own successor) of
// kBlock m a side on a kPitch m pitch, `pedestrians` background pedestrians
// spread over them by length (the density ledger), all spawned on step 1;
// tier caps as in `bustle-bench population` (Full 10 %, Simulated 30 %).
// `districts` centres: up to 8 on a 4 x 2 layout 500 m apart (they do not
// overlap at the default share), 9 to 64 on an 8 x 8 layout 250 m apart
// (neighbours overlap: a city of a million cannot give 64 clients 20 000
// pedestrians each without sharing); each radius is found by bisection so
// that the sidewalk inside it carries `share` pedestrians.
DistrictCity make_district_city(std::uint32_t pedestrians, std::uint32_t districts,
                                std::uint32_t share);

// Sidewalk length of the city within `radius_m` of (x, y), exact per segment.
double sidewalk_within(double x_m, double y_m, double radius_m);

inline constexpr std::uint32_t kGrid = 20;
inline constexpr double kBlock = 80.0;
inline constexpr double kPitch = 100.0;
inline constexpr std::uint32_t kMaxDistricts = 64;

}  // namespace bustle::bench
