// Work-point occupancy (invariant 4): members follow their schedule's
// work point, claim a free slot or wait in FIFO order, and a freed slot goes
// to the head of the queue.
#include <algorithm>
#include <cassert>

#include "bustle/core/population.hpp"

namespace bustle::core {

void PopulationSystem::follow_work_points() {
  for (const std::uint32_t i : active_list_) {
    if (residents_.active[i] != ResidentStore::kActive) continue;
    const std::int32_t want =
        static_cast<std::int64_t>(residents_.zone[i]) == desired_zone_[residents_.community[i]]
            ? desired_wp_[residents_.community[i]]
            : ResidentStore::kNone;
    if (want != residents_.work_point[i]) {
      release_work_point(i);
      residents_.work_point[i] = want;
      claim_work_point(i);
      refresh(i);
    }
  }
}

void PopulationSystem::claim_work_point(std::uint32_t i) {
  residents_.work_slot[i] = ResidentStore::kNone;
  if (residents_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
  for (std::size_t s = 0; s < wp.occupant.size(); ++s) {
    if (wp.occupant[s] == ResidentStore::kNone) {
      wp.occupant[s] = static_cast<std::int32_t>(i);
      residents_.work_slot[i] = static_cast<std::int32_t>(s);
      return;
    }
  }
  assert(residents_.active[i] == ResidentStore::kActive);  // invariant 4: only active members wait
  wp.waiting.push_back(i);                                 // full: wait in FIFO order
}

void PopulationSystem::release_work_point(std::uint32_t i) {
  if (residents_.work_point[i] == ResidentStore::kNone) return;
  WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
  if (residents_.work_slot[i] == ResidentStore::kNone) {
    wp.waiting.erase(std::remove(wp.waiting.begin(), wp.waiting.end(), i), wp.waiting.end());
    return;
  }
  const auto slot = static_cast<std::size_t>(residents_.work_slot[i]);
  // Invariant 4 where it is read back: the slot names the resident claim_work_point() put there.
  assert(wp.occupant[slot] == static_cast<std::int32_t>(i));
  wp.occupant[slot] = ResidentStore::kNone;
  residents_.work_slot[i] = ResidentStore::kNone;
  if (!wp.waiting.empty()) {  // the head of the queue takes the freed slot
    const std::uint32_t next = wp.waiting.front();
    wp.waiting.erase(wp.waiting.begin());
    wp.occupant[slot] = static_cast<std::int32_t>(next);
    residents_.work_slot[next] = static_cast<std::int32_t>(slot);
    refresh(next);
  }
}

}  // namespace bustle::core
