// Addresses on the command line: "HOST:PORT" and the district lists
// "ID=HOST:PORT[,ID=HOST:PORT...]" that district servers (--district-peers)
// and the gateway (--districts) take, parsed one way for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bustle/args/checks.hpp"

namespace bustle::args {

// "HOST:PORT" (an IPv6 host in brackets) into its parts; "" or the reason.
inline std::string split_host_port(const std::string& v, std::string& host, std::uint16_t& port) {
  const std::size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected HOST:PORT, got '" + v + "'";
  host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return store_whole<std::uint16_t>(v.substr(colon + 1), 0, 65535, port, "a port in HOST:PORT");
}

// Where one district of a city listens.
struct DistrictAddress {
  std::string district, host;
  std::uint16_t port = 0;
};

// "ID=HOST:PORT[,ID=HOST:PORT...]" into `out` (replaced); "" or the reason,
// naming the item ("d1: expected HOST:PORT, got 'x'").
inline std::string parse_district_addresses(const std::string& v,
                                            std::vector<DistrictAddress>& out) {
  out.clear();
  std::size_t at = 0;
  while (at <= v.size()) {
    const std::size_t comma = std::min(v.find(',', at), v.size());
    const std::string item = v.substr(at, comma - at);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return "expected ID=HOST:PORT[,ID=HOST:PORT...], got '" + item + "'";
    DistrictAddress p;
    p.district = item.substr(0, eq);
    if (std::string e = split_host_port(item.substr(eq + 1), p.host, p.port); !e.empty())
      return p.district + ": " + e;
    out.push_back(std::move(p));
    at = comma + 1;
  }
  return {};
}

}  // namespace bustle::args
