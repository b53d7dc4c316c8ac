// --resume FILE (docs/snapshots-and-replay.md): a server starts where a
// recording of an earlier run of the same city ends. Its last keyframe
// before the last recorded tick is restored and the ticks recorded after it
// are replayed, every digest checked, so a district killed with -9 comes back
// at the step it had recorded, able to send again the step ends of the steps
// it replayed, and its neighbours, which waited, go on (docs/districts.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bustle/core/log_sink.hpp"
#include "bustle/core/world.hpp"

namespace bustle::app {

// One replayed step's end, as a district sends it to its neighbours.
struct ReplayedStepEnd {
  std::uint64_t step = 0;
  std::uint64_t digest = 0;
  std::vector<core::BorderArrivals> outbox;  // World::border_outbox()
};

struct Resumed {
  std::unique_ptr<core::World> world;  // null when error is set
  std::vector<ReplayedStepEnd> step_ends;
  std::uint64_t keyframe_step = 0;
  std::string error;  // names the file and what is wrong
};

// `scenario` is the city this server runs (--config, --district): the
// recording must be of the same scenario id and district.
Resumed resume_from_recording(const std::string& path, const core::Scenario& scenario,
                              core::LogSink* log);

}  // namespace bustle::app
