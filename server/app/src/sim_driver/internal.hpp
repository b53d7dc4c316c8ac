// Names the sim driver's files share (sim_driver/*.cpp); not for users of
// sim_driver.hpp.
#pragma once

#include <chrono>

#include "../sim_driver.hpp"

namespace bustle::app {

using Clock = std::chrono::steady_clock;
using Kind = net::ControlCommand::Kind;

}  // namespace bustle::app
