// Command CancelGarageRequest: a queued (not yet dispatched) garage request
// is withdrawn.
#include "../world_internal.hpp"
#include "bustle/core/world.hpp"

namespace bustle::core {

void World::apply_command(const CancelGarageRequest& c, CommandResult& r) {
  switch (vehicles_.cancel(c.garage, c.request_id)) {
    case CancelStatus::Canceled:
      accept(r);
      return;
    case CancelStatus::NotQueued:
      reject(r, RejectReason::NotFound, "request '" + c.request_id + "' is not queued");
      return;
    case CancelStatus::AlreadyDispatched:
      reject(r, RejectReason::InvalidArgument,
             "request '" + c.request_id + "' was already dispatched");
      return;
    case CancelStatus::UnknownGarage:
      reject(r, RejectReason::InvalidArgument, "garage: unknown garage '" + c.garage + "'");
      return;
  }
  r.status = CommandStatus::Rejected;
}

}  // namespace bustle::core
