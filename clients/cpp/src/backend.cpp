// The names of a backend activation's outcomes (backend.hpp).
#include "bustle/client/backend.hpp"

namespace bustle::client {

const char* to_string(ActivationStatus v) {
  switch (v) {
    case ActivationStatus::Active:
      return "Active";
    case ActivationStatus::Pending:
      return "Pending";
    case ActivationStatus::Refused:
      return "Refused";
  }
  return "?";
}

}  // namespace bustle::client
