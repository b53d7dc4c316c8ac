// bustle-gateway: gateway_main() (src/gateway_main.cpp) is in the library,
// so that it compiles in one batch with the code it wires.
#include "bustle/gateway/gateway_main.hpp"

int main(int argc, char** argv) {
  return bustle::gateway::gateway_main(argc, argv);
}
