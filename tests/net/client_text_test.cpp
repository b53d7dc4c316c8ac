#include "bustle/net/client_text.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "bustle/net/server.hpp"

using bustle::net::client_text;

TEST_CASE("client text is quoted, escaped and cut before it reaches a log") {
  CHECK(client_text("viewer-1") == "'viewer-1'");
  CHECK(client_text("") == "''");
  // Control bytes, terminal escapes, quotes and backslashes never pass raw.
  CHECK(client_text("a\nb\x1b[31m'\\") == "'a\\x0ab\\x1b[31m\\x27\\x5c'");
  CHECK(client_text(std::string("\0z", 2)) == "'\\x00z'");
  // Long text is cut to the limit and says how long it was.
  const std::string big(1'000'000, 'n');
  const std::string shown = client_text(big);
  CHECK(shown == "'" + std::string(bustle::net::kClientTextLogBytes, 'n') + "...' (1000000 bytes)");
  CHECK(client_text("abcdef", 3) == "'abc...' (6 bytes)");
  // Bytes above 0x7f (UTF-8 or not) are escaped, so a cut never splits a character into garbage.
  CHECK(client_text("\xc3\xa9") == "'\\xc3\\xa9'");
}

TEST_CASE("the hard outbound limit is twice the soft cap, and at least cap + 1 MiB") {
  bustle::net::ServerOptions o;
  o.outbound_bytes_max = 8u << 20;
  CHECK(bustle::net::outbound_hard_max_bytes(o) == 16u << 20);
  o.outbound_bytes_max = 4096;
  CHECK(bustle::net::outbound_hard_max_bytes(o) == 4096 + (1u << 20));
}
