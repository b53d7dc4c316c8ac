// bustle-gateway's whole program: options (CLI11 and BUSTLE_* variables),
// start-up, the network thread and the gateway's loop; returns the exit
// status (0 stopped by a signal, 1 cannot listen, 2 bad settings or a
// district of another city).
#pragma once

namespace bustle::gateway {

int gateway_main(int argc, char** argv);

}  // namespace bustle::gateway
