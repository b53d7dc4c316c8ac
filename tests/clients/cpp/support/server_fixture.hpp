// Catch2 glue over process.hpp: start the real bustle-server for a test case,
// or fail the test with the reason the server did not come up.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace bustle::test {

inline std::unique_ptr<ServerUnderTest> start_or_fail(const std::string& server_path,
                                                      const std::vector<std::string>& args) {
  std::string error;
  auto server = start_server(server_path, args, error);
  INFO(error);
  REQUIRE(server != nullptr);
  return server;
}

}  // namespace bustle::test
