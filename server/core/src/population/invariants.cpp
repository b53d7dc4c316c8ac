// PopulationSystem::check_invariants: the population's invariants (see
// population.hpp), checked between steps, section by section.
#include <algorithm>
#include <string>
#include <vector>

#include "bustle/core/population.hpp"

namespace bustle::core {

// Invariant 2's last part: every member is active, dormant or deceased, and
// the deceased count agrees with a recount.
Status PopulationSystem::check_member_total(std::uint32_t active_total,
                                            std::uint32_t dormant_total) const {
  std::uint32_t deceased_total = 0;
  for (const std::uint8_t a : residents_.active) deceased_total += a == ResidentStore::kDeceased;
  if (deceased_total != deceased_total_)
    return Status::internal("invariant 2: " + std::to_string(deceased_total_) +
                            " deceased counted, " + std::to_string(deceased_total) +
                            " members are");
  if (active_total + dormant_total + deceased_total != residents_.size()) {
    return Status::internal("invariant 2: active " + std::to_string(active_total) + " + dormant " +
                            std::to_string(dormant_total) + " + deceased " +
                            std::to_string(deceased_total) + " != identities " +
                            std::to_string(residents_.size()));
  }
  return {};
}

namespace {
std::string resident_text(const ResidentStore& r, std::uint32_t i) {
  return "resident " + std::to_string(i) + " (" + id_text(r.id[i]) + ")";
}
}  // namespace

// What check_invariants recounts from the rows, to compare with what the
// system maintains.
struct PopulationSystem::Recount {
  std::vector<std::uint32_t> active_cz, dormant, active, retiring;
  std::uint32_t active_total = 0, retiring_total = 0;
};

Status PopulationSystem::check_invariants(const EntityRegistry& registry) const {
  const std::string area = "population: ";
  const std::uint32_t n = residents_.size();
  if (residents_.community.size() != n || residents_.profession.size() != n ||
      residents_.zone.size() != n || residents_.active.size() != n ||
      residents_.work_point.size() != n || residents_.work_slot.size() != n ||
      row_hash_.size() != n) {
    return Status::internal("population: column lengths differ");
  }
  Recount r;
  Status why = check_resident_rows(registry, r);
  if (why.ok()) why = check_counts(r);
  if (why.ok()) why = check_work_point_slots();
  if (why.ok()) why = check_handoffs();
  return why.within(area);
}

// 1. Identities, per row; counts them into `r` (invariant 2) and checks the
// sorted active list and each row's work-point (invariant 4).
Status PopulationSystem::check_resident_rows(const EntityRegistry& registry, Recount& r) const {
  const std::uint32_t n = residents_.size();
  const std::size_t nz = zones_.size();
  r.active_cz.assign(active_cz_.size(), 0);
  r.dormant.assign(nz, 0);
  r.active.assign(nz, 0);
  r.retiring.assign(nz, 0);
  std::uint64_t row_sum = 0;
  std::size_t listed = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!registry.is_alive(residents_.id[i]))
      return Status::internal("invariant 1: " + resident_text(residents_, i) +
                              " is not alive in the registry");
    if (resident_of(residents_.id[i]) != static_cast<std::int32_t>(i)) {
      return Status::internal("invariant 1: " + resident_text(residents_, i) +
                              " maps back to resident " +
                              std::to_string(resident_of(residents_.id[i])));
    }
    if (residents_.active[i] > ResidentStore::kDeceased)
      return Status::internal("invariant 1: " + resident_text(residents_, i) + " has lifecycle " +
                              std::to_string(residents_.active[i]));
    if (residents_.zone[i] >= nz)
      return Status::internal(resident_text(residents_, i) + " is in unknown zone " +
                              std::to_string(residents_.zone[i]));
    row_sum += row_hash(i);
    if (residents_.active[i] == ResidentStore::kDormant) {
      ++r.dormant[residents_.zone[i]];
    } else if (residents_.active[i] != ResidentStore::kDeceased) {
      ++r.active[residents_.zone[i]];
      ++r.active_cz[residents_.community[i] * nz + residents_.zone[i]];
      ++r.active_total;
      if (residents_.active[i] == ResidentStore::kRetiring) {
        ++r.retiring[residents_.zone[i]];
        ++r.retiring_total;
      }
      if (listed >= active_list_.size() || active_list_[listed] != i) {
        return Status::internal("invariant 2: " + resident_text(residents_, i) +
                                " is active but not next in the sorted active list");
      }
      ++listed;
    }
    if (Status why = check_resident_work_point(i); !why.ok()) return why;
  }
  if (listed != active_list_.size())
    return Status::internal("invariant 2: the active list holds dormant residents");
  if (row_sum != row_sum_) return Status::internal("incremental row digest differs from a recount");
  return {};
}

// 4. Work-points: the resident's side.
Status PopulationSystem::check_resident_work_point(std::uint32_t i) const {
  if (residents_.work_point[i] == ResidentStore::kNone) {
    if (residents_.work_slot[i] == ResidentStore::kNone) return {};
    return Status::internal("invariant 4: " + resident_text(residents_, i) + " holds slot " +
                            std::to_string(residents_.work_slot[i]) + " of no work-point");
  }
  if (residents_.active[i] != ResidentStore::kActive)
    return Status::internal("invariant 4: " + resident_text(residents_, i) +
                            " is not active but holds or awaits a work-point");
  if (residents_.work_point[i] < 0 ||
      static_cast<std::size_t>(residents_.work_point[i]) >= work_points_.size()) {
    return Status::internal("invariant 4: " + resident_text(residents_, i) +
                            " names unknown work-point " +
                            std::to_string(residents_.work_point[i]));
  }
  const WorkPointState& wp = work_points_[static_cast<std::size_t>(residents_.work_point[i])];
  if (residents_.work_slot[i] != ResidentStore::kNone) {
    const auto slot = static_cast<std::size_t>(residents_.work_slot[i]);
    if (slot >= wp.occupant.size() || wp.occupant[slot] != static_cast<std::int32_t>(i)) {
      return Status::internal("invariant 4: " + resident_text(residents_, i) + " holds slot " +
                              std::to_string(slot) + " of work-point " +
                              std::to_string(residents_.work_point[i]) +
                              ", which does not name it");
    }
  } else if (std::count(wp.waiting.begin(), wp.waiting.end(), i) != 1) {
    return Status::internal("invariant 5: " + resident_text(residents_, i) + " awaits work-point " +
                            std::to_string(residents_.work_point[i]) +
                            " but is not in its FIFO exactly once");
  }
  return {};
}

// 2. Counts against the recount; 3. capacity.
Status PopulationSystem::check_counts(const Recount& r) const {
  const std::size_t nz = zones_.size();
  std::uint32_t dormant_total = 0;
  for (std::size_t z = 0; z < nz; ++z) {
    const std::string zone = "zone " + scenario_->zones[z].id;
    if (zones_[z].dormant != r.dormant[z]) {
      return Status::internal("invariant 2: " + zone + " counts " +
                              std::to_string(zones_[z].dormant) + " dormant, " +
                              std::to_string(r.dormant[z]) + " members are");
    }
    if (zones_[z].retiring != r.retiring[z]) {
      return Status::internal("invariant 2: " + zone + " counts " +
                              std::to_string(zones_[z].retiring) + " retiring, " +
                              std::to_string(r.retiring[z]) + " members are");
    }
    if (r.active[z] > scenario_->zones[z].capacity) {
      return Status::internal("invariant 3: " + zone + " has " + std::to_string(r.active[z]) +
                              " active members, capacity " +
                              std::to_string(scenario_->zones[z].capacity));
    }
    dormant_total += r.dormant[z];
  }
  for (std::size_t cell = 0; cell < r.active_cz.size(); ++cell) {
    if (r.active_cz[cell] != active_cz_[cell]) {
      return Status::internal("invariant 2: community " + scenario_->communities[cell / nz].id +
                              " in zone " + scenario_->zones[cell % nz].id + " counts " +
                              std::to_string(active_cz_[cell]) + " active, " +
                              std::to_string(r.active_cz[cell]) + " members are");
    }
  }
  if (r.active_total != active_total_ || r.retiring_total != retiring_total_) {
    return Status::internal("invariant 2: totals count " + std::to_string(active_total_) +
                            " active / " + std::to_string(retiring_total_) +
                            " retiring, the residents hold " + std::to_string(r.active_total) +
                            " / " + std::to_string(r.retiring_total));
  }
  return check_member_total(r.active_total, dormant_total);
}

// 4, 5. Work-points: the slots' side and the FIFOs.
Status PopulationSystem::check_work_point_slots() const {
  const std::uint32_t n = residents_.size();
  for (std::size_t w = 0; w < work_points_.size(); ++w) {
    const WorkPointState& wp = work_points_[w];
    const std::string point = "work-point " + scenario_->work_points[w].id;
    bool full = true;
    for (std::size_t slot = 0; slot < wp.occupant.size(); ++slot) {
      const std::int32_t o = wp.occupant[slot];
      if (o == ResidentStore::kNone) {
        full = false;
        continue;
      }
      if (o < 0 || static_cast<std::uint32_t>(o) >= n ||
          residents_.work_point[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(w) ||
          residents_.work_slot[static_cast<std::size_t>(o)] != static_cast<std::int32_t>(slot)) {
        return Status::internal("invariant 4: " + point + " slot " + std::to_string(slot) +
                                " holds resident " + std::to_string(o) +
                                ", which does not hold that slot");
      }
    }
    if (!wp.waiting.empty() && !full)
      return Status::internal("invariant 5: " + point + " has a free slot and a waiting resident");
    for (const std::uint32_t q : wp.waiting) {
      if (q >= n || residents_.work_point[q] != static_cast<std::int32_t>(w) ||
          residents_.work_slot[q] != ResidentStore::kNone) {
        return Status::internal("invariant 5: " + point + " FIFO holds resident " +
                                std::to_string(q) + ", which does not await it");
      }
    }
  }
  return {};
}

// 6. Handoffs.
Status PopulationSystem::check_handoffs() const {
  for (std::size_t k = 0; k < handoffs_.size(); ++k) {
    const ZoneHandoff& h = handoffs_[k];
    if (k > 0 && !(handoffs_[k - 1].resident < h.resident))
      return Status::internal("invariant 6: handoffs are not sorted by resident");
    if (h.resident >= residents_.size() ||
        residents_.active[h.resident] != ResidentStore::kActive ||
        residents_.zone[h.resident] != h.from || h.to >= zones_.size()) {
      return Status::internal("invariant 6: handoff of resident " + std::to_string(h.resident) +
                              " from zone " + std::to_string(h.from) + ": it is not active there");
    }
  }
  return {};
}

}  // namespace bustle::core
