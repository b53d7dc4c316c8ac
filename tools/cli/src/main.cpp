#include "bustle/cli/cli.hpp"

int main(int argc, char** argv) {
  return bustle::cli::main_entry(argc, argv);
}
