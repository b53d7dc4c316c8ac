// Garage request queues (invariants 1 and 2): enqueue, cancel, the content
// plan that feeds them, and the vehicles waiting in a garage's mouth.
#include <algorithm>
#include <cassert>
#include <optional>
#include <string>
#include <utility>

#include "bustle/core/vehicles.hpp"
#include "internal.hpp"

namespace bustle::core {

std::optional<std::uint32_t> VehicleSystem::garage_index(const std::string& id) const {
  for (std::uint32_t g = 0; g < scenario_->garages.size(); ++g) {
    if (scenario_->garages[g].id == id) return g;
  }
  return std::nullopt;
}

EnqueueResult VehicleSystem::enqueue(const std::string& garage, const std::string& request_id,
                                     const std::string& prototype, const std::string& lane,
                                     std::int32_t priority) {
  EnqueueResult r;
  const auto g = garage_index(garage);
  if (!g) {
    r.field = "garage";
    r.message = "unknown garage '" + garage + "'";
    return r;
  }
  if (!garage_here(*g)) {  // a district world: the garage's district dispatches it
    r.field = "garage";
    r.message = "garage '" + garage + "' belongs to district '" +
                scenario_->districts[garage_district_[*g]].id + "'; ask that district's server";
    return r;
  }
  GarageState& gs = garages_[*g];
  const GarageSpec& spec = scenario_->garages[*g];
  auto invalid = [&](const char* field, std::string msg) {
    ++gs.rejected_invalid;
    r.status = EnqueueStatus::Invalid;
    r.field = field;
    r.message = std::move(msg);
    return r;
  };
  if (request_id.empty() || request_id.size() > 128)
    return invalid("request_id", "must be 1-128 characters");
  const auto proto = std::find(spec.prototypes.begin(), spec.prototypes.end(), prototype);
  if (proto == spec.prototypes.end()) {
    return invalid("prototype", "garage '" + spec.id + "' has no prototype '" + prototype + "'");
  }
  if (lane != spec.lane)
    return invalid("lane",
                   "garage '" + spec.id + "' dispatches onto lane '" + spec.lane + "' only");
  const bool queued = std::any_of(gs.queue.begin(), gs.queue.end(), [&](const QueuedRequest& q) {
    return q.request_id == request_id;
  });
  if (queued || std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), request_id)) {
    ++gs.rejected_duplicate;
    r.status = EnqueueStatus::Duplicate;
    r.field = "request_id";
    r.message = "request '" + request_id + "' is already " + (queued ? "queued" : "dispatched");
    return r;
  }
  if (gs.queue.size() >= spec.queue_depth) {
    ++gs.rejected_queue_full;
    r.status = EnqueueStatus::QueueFull;
    r.message = "garage '" + spec.id + "' queue holds " + std::to_string(spec.queue_depth) +
                " requests (max)";
    return r;
  }
  QueuedRequest q{request_id, static_cast<std::uint32_t>(proto - spec.prototypes.begin()), priority,
                  gs.next_enqueue_ordinal++};
  // Insert at its sorted position: priority desc, then ordinal asc (the new
  // ordinal is the largest, so it goes after every equal priority).
  auto pos = std::find_if(gs.queue.begin(), gs.queue.end(),
                          [&](const QueuedRequest& e) { return e.priority < priority; });
  pos = gs.queue.insert(pos, std::move(q));
  // Invariant 2 where it is written: the new request sits between its neighbours.
  assert(pos == gs.queue.begin() || queue_in_order(*(pos - 1), *pos));
  assert(pos + 1 == gs.queue.end() || queue_in_order(*pos, *(pos + 1)));
  r.status = EnqueueStatus::Accepted;
  r.ordinal = gs.next_enqueue_ordinal - 1;
  return r;
}

CancelStatus VehicleSystem::cancel(const std::string& garage, const std::string& request_id) {
  const auto g = garage_index(garage);
  if (!g) return CancelStatus::UnknownGarage;
  GarageState& gs = garages_[*g];
  auto it = std::find_if(gs.queue.begin(), gs.queue.end(),
                         [&](const QueuedRequest& q) { return q.request_id == request_id; });
  if (it == gs.queue.end()) {
    return std::binary_search(gs.dispatched.begin(), gs.dispatched.end(), request_id)
               ? CancelStatus::AlreadyDispatched
               : CancelStatus::NotQueued;
  }
  gs.queue.erase(it);  // erase keeps the remaining order
  ++gs.canceled;
  return CancelStatus::Canceled;
}

std::size_t VehicleSystem::mouth_count() const {
  std::size_t n = 0;
  for (const GarageState& gs : garages_) n += gs.mouth.size();
  return n;
}

std::optional<VehicleSystem::MouthPlace> VehicleSystem::mouth_place(EntityId id) const {
  for (std::uint32_t g = 0; g < garages_.size(); ++g) {
    const auto& mouth = garages_[g].mouth;
    for (std::uint32_t k = 0; k < mouth.size(); ++k) {
      if (mouth[k].id == id) return MouthPlace{g, k};
    }
  }
  return std::nullopt;
}

std::string VehicleSystem::mouth_text(EntityId id) const {
  const auto at = mouth_place(id);
  if (!at) return {};
  const GarageSpec& g = scenario_->garages[at->garage];
  const MouthVehicle& m = garages_[at->garage].mouth[at->position];
  return format_vehicle_id(g.vehicle_id_format, g.id, scenario_->id, m.ordinal) +
         " waits in garage '" + g.id + "' mouth (place " + std::to_string(at->position + 1) +
         " of " + std::to_string(garages_[at->garage].mouth.size()) + "): not on the road yet";
}

void VehicleSystem::inject_plan(std::uint64_t step_index) {
  const VehiclePlanSpec& plan = scenario_->vehicle_plan;
  if (plan.requests.empty() || (step_index - 1) % plan.batch_interval_steps != 0) return;
  for (std::uint32_t k = 0; k < plan.batch_size && plan_.cursor < plan.requests.size(); ++k) {
    const PlannedRequest& p = plan.requests[plan_.cursor];
    if (const auto g = garage_index(p.garage); g && !garage_here(*g)) {
      ++plan_.cursor;  // another district's garage: that district offers it
      continue;
    }
    const EnqueueResult r = enqueue(p.garage, p.request_id, p.prototype, p.lane, p.priority);
    if (r.status == EnqueueStatus::QueueFull) break;  // offered again next batch: nothing lost
    ++plan_.cursor;
    if (r.status == EnqueueStatus::Accepted) {
      ++plan_.accepted;
    } else {
      ++plan_.rejected;
    }
  }
}

}  // namespace bustle::core
