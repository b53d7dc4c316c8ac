// The `bustle` executable: everything is in the bustle::cli library
// (main_entry in commands.cpp), so tests can run it without a process.
#include "bustle/cli/cli.hpp"

int main(int argc, char** argv) {
  return bustle::cli::main_entry(argc, argv);
}
