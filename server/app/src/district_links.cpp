// Neighbour lockstep between district servers (district_links.hpp).
#include "district_links.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "bustle/persist/command_codec.hpp"

namespace bustle::app {
namespace {

using asio::ip::tcp;
using nlohmann::json;

// A frame larger than this is refused (a million crossings is about 60 MB).
constexpr std::uint32_t kFrameBytesMax = 256u << 20;
constexpr auto kDialRetry = std::chrono::milliseconds(100);
constexpr auto kWaitLogEvery = std::chrono::seconds(5);

std::string frame(const json& body) {
  const std::string text = body.dump();
  const auto n = static_cast<std::uint32_t>(text.size());
  std::string out(4, '\0');
  for (std::size_t b = 0; b < 4; ++b) out[b] = static_cast<char>(n >> (8 * b));
  return out + text;
}

// Reads one frame's JSON object; false at the end of the stream or on a bad
// frame, with `why`.
bool read_frame(tcp::socket& socket, json& out, std::string& why,
                std::atomic<std::uint64_t>& bytes) {
  unsigned char head[4];
  asio::error_code ec;
  asio::read(socket, asio::buffer(head), ec);
  if (ec) {
    why = ec == asio::error::eof ? "closed its link" : "link failed: " + ec.message();
    return false;
  }
  const std::uint32_t n = head[0] | head[1] << 8 | head[2] << 16 | std::uint32_t{head[3]} << 24;
  if (n > kFrameBytesMax) {
    why = "sent a frame of " + std::to_string(n) + " bytes (at most " +
          std::to_string(kFrameBytesMax) + ")";
    return false;
  }
  std::string body(n, '\0');
  asio::read(socket, asio::buffer(body), ec);
  if (ec) {
    why = "link failed inside a frame: " + ec.message();
    return false;
  }
  bytes += 4 + n;
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded() || !out.is_object() || !out.contains("type") || !out["type"].is_string()) {
    why = "sent a frame that is not a JSON object with a type";
    return false;
  }
  return true;
}

// A step_end frame into `out`; false with `why` when a field is wrong.
bool parse_step_end(const json& j, std::uint32_t from, StepEnd& out, std::string& why) {
  if (j["type"] != "step_end" || !j.contains("step") || !j["step"].is_number_unsigned() ||
      !j.contains("digest") || !j["digest"].is_number_unsigned() || !j.contains("arrivals") ||
      !j["arrivals"].is_object()) {
    why = "sent a frame that is not a step_end with step, digest and arrivals";
    return false;
  }
  out.from = from;
  out.step = j["step"].get<std::uint64_t>();
  out.digest = j["digest"].get<std::uint64_t>();
  auto decoded = persist::decode_command("border_arrivals", j["arrivals"].dump());
  if (!decoded.ok()) {
    why = "sent step_end " + std::to_string(out.step) +
          " with bad arrivals: " + decoded.status().message();
    return false;
  }
  out.arrivals = std::get<core::BorderArrivals>(*decoded);
  if (out.arrivals.from_district != from || out.arrivals.sent_step != out.step) {
    why =
        "sent step_end " + std::to_string(out.step) + " whose arrivals name another sender or step";
    return false;
  }
  return true;
}

// Unblocks a thread blocked on this descriptor (accept, read).
void shut(int fd) {
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

}  // namespace

struct DistrictLinks::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::unique_ptr<tcp::socket>> accepted;  // before their hello (under mutex_)
};

struct DistrictLinks::Link {
  std::uint32_t district = 0;
  // Writers (the sim thread; the thread that connects it) hold write_mutex.
  std::mutex write_mutex;
  std::unique_ptr<tcp::socket> socket;  // set once connected
  std::vector<std::string> pending;     // frames sent before the link was up
  // Under DistrictLinks::mutex_.
  std::deque<StepEnd> inbound;
  bool closed = false;
  std::optional<std::uint64_t> last_step;  // of the last StepEnd read

  // Connects the link to `s` and sends what waited for it.
  void connect(std::unique_ptr<tcp::socket> s, std::atomic<std::uint64_t>& bytes) {
    std::lock_guard<std::mutex> lock(write_mutex);
    socket = std::move(s);
    asio::error_code ec;
    for (const std::string& f : pending) {
      asio::write(*socket, asio::buffer(f), ec);
      bytes += f.size();
    }
    pending.clear();
  }
};

std::vector<std::uint32_t> district_neighbours(const core::Scenario& s, std::uint32_t own) {
  std::map<std::string, std::uint32_t> owner;
  for (std::uint32_t d = 0; d < s.districts.size(); ++d) {
    for (const std::string& id : s.districts[d].lanes) owner[id] = d;
  }
  std::set<std::uint32_t> out;
  for (const core::LaneSpec& l : s.lanes) {
    const std::uint32_t from = owner.at(l.id);
    for (const std::string& next : l.successors) {
      const std::uint32_t to = owner.at(next);
      if (from == own && to != own) out.insert(to);
      if (to == own && from != own) out.insert(from);
    }
  }
  return {out.begin(), out.end()};
}

DistrictLinks::DistrictLinks(DistrictLinkOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  for (const std::uint32_t d : options_.neighbours) {
    links_.push_back(std::make_unique<Link>());
    links_.back()->district = d;
  }
}

DistrictLinks::~DistrictLinks() {
  closing_ = true;
  if (impl_->acceptor.is_open()) shut(impl_->acceptor.native_handle());
  for (auto& link : links_) {
    std::lock_guard<std::mutex> lock(link->write_mutex);
    if (link->socket) shut(link->socket->native_handle());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : impl_->accepted) {
      if (s) shut(s->native_handle());  // still in its handshake
    }
  }
  arrived_.notify_all();
  for (std::thread& t : threads_) t.join();  // the accept loop starts no thread after this
  for (std::thread& t : accepted_threads_) t.join();
}

std::string DistrictLinks::name(std::uint32_t district) const {
  return district < options_.district_ids.size() ? "'" + options_.district_ids[district] + "'"
                                                 : "#" + std::to_string(district);
}

DistrictLinks::Link* DistrictLinks::link_of(std::uint32_t district) {
  for (auto& link : links_) {
    if (link->district == district) return link.get();
  }
  return nullptr;
}

core::Status DistrictLinks::start() {
  asio::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options_.listen_host, ec);
  const std::string where = options_.listen_host + ":" + std::to_string(options_.listen_port);
  if (ec) return core::Status::invalid_argument("--district-listen " + where + ": " + ec.message());
  const tcp::endpoint endpoint(address, options_.listen_port);
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return core::Status::unavailable("--district-listen " + where + ": " + ec.message());
  listen_port_ = acceptor.local_endpoint().port();
  threads_.emplace_back([this] { accept_loop(); });
  for (const DistrictPeer& peer : options_.dial) {
    Link* link = link_of(peer.district);
    threads_.emplace_back([this, link, peer] { dial_loop(*link, peer); });
  }
  return {};
}

void DistrictLinks::accept_loop() {
  while (!closing_) {
    auto socket = std::make_unique<tcp::socket>(impl_->io);
    asio::error_code ec;
    impl_->acceptor.accept(*socket, ec);
    if (ec) {
      if (closing_) return;
      spdlog::warn("district links: accept failed: {}", ec.message());
      std::this_thread::sleep_for(kDialRetry);
      continue;
    }
    socket->set_option(tcp::no_delay(true), ec);
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return;
    impl_->accepted.push_back(std::move(socket));
    const std::size_t k = impl_->accepted.size() - 1;
    accepted_threads_.emplace_back([this, k] { handshake(k); });
  }
}

// The dialler's hello names a neighbour with a higher index, of this
// scenario, not connected yet; anything else is refused and closed.
void DistrictLinks::handshake(std::size_t accepted) {
  tcp::socket* socket = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    socket = impl_->accepted[accepted].get();
  }
  json hello;
  std::string why;
  std::atomic<std::uint64_t> bytes{0};
  if (!read_frame(*socket, hello, why, bytes)) return;
  bytes_received_ += bytes;
  const bool well_formed = hello["type"] == "hello" && hello.contains("district") &&
                           hello["district"].is_number_unsigned() && hello.contains("scenario") &&
                           hello["scenario"].is_string();
  const std::uint32_t from = well_formed ? hello["district"].get<std::uint32_t>() : 0;
  Link* link = well_formed && from > options_.own ? link_of(from) : nullptr;
  std::string refusal;
  if (link == nullptr) {
    refusal = "a hello from no neighbour that dials this district";
  } else if (hello["scenario"] != options_.scenario_id) {
    refusal = "district " + name(from) + " runs scenario '" + hello["scenario"].get<std::string>() +
              "', this one '" + options_.scenario_id + "'";
  }
  std::unique_ptr<tcp::socket> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    owned = std::move(impl_->accepted[accepted]);
    if (refusal.empty() && (link->closed || link->last_step)) refusal = "a second link";
  }
  if (!refusal.empty()) {
    spdlog::error("district links: refused a connection: {}", refusal);
    return;  // closes it
  }
  spdlog::info("district links: district {} connected", name(from));
  link->connect(std::move(owned), bytes_sent_);
  read_loop(*link);
}

void DistrictLinks::dial_loop(Link& link, DistrictPeer peer) {
  asio::error_code ec;
  const asio::ip::address address = asio::ip::make_address(peer.host, ec);
  if (ec) {
    fail(link, "cannot be dialled at '" + peer.host + "': " + ec.message());
    return;
  }
  auto socket = std::make_unique<tcp::socket>(impl_->io);
  bool logged = false;
  while (!closing_) {
    socket->connect(tcp::endpoint(address, peer.port), ec);
    if (!ec) break;
    asio::error_code ignored;
    socket->close(ignored);
    if (!logged) {
      spdlog::info("district links: dialling district {} at {}:{} ({}); retrying",
                   name(peer.district), peer.host, peer.port, ec.message());
      logged = true;
    }
    std::this_thread::sleep_for(kDialRetry);
  }
  if (closing_) return;
  socket->set_option(tcp::no_delay(true), ec);
  const std::string hello = frame(
      json{{"type", "hello"}, {"district", options_.own}, {"scenario", options_.scenario_id}});
  asio::write(*socket, asio::buffer(hello), ec);
  if (ec) {
    fail(link, "link failed at its hello: " + ec.message());
    return;
  }
  bytes_sent_ += hello.size();
  spdlog::info("district links: connected to district {} at {}:{}", name(peer.district), peer.host,
               peer.port);
  link.connect(std::move(socket), bytes_sent_);
  read_loop(link);
}

// StepEnd frames, in step order, until the link ends.
void DistrictLinks::read_loop(Link& link) {
  tcp::socket& socket = *link.socket;  // set by connect(), never replaced
  while (!closing_) {
    json j;
    std::string why;
    StepEnd end;
    if (!read_frame(socket, j, why, bytes_received_) ||
        !parse_step_end(j, link.district, end, why)) {
      fail(link, why);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (link.last_step && end.step != *link.last_step + 1) {
      link.closed = true;
      if (error_.ok())
        error_ = core::Status::unavailable("district " + name(link.district) + " sent step_end " +
                                           std::to_string(end.step) + " after " +
                                           std::to_string(*link.last_step));
      arrived_.notify_all();
      return;
    }
    link.last_step = end.step;
    link.inbound.push_back(std::move(end));
    arrived_.notify_all();
  }
}

void DistrictLinks::fail(Link& link, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  link.closed = true;
  // A link that ends after its last frame is an error only if that frame
  // is waited for (await_step_end).
  if (!closing_) spdlog::info("district links: district {} {}", name(link.district), why);
  link_errors_[link.district] = why;
  arrived_.notify_all();
}

void DistrictLinks::send_step_end(std::uint64_t step, std::uint64_t digest,
                                  std::span<const core::BorderDeparture> departures) {
  for (auto& link : links_) {
    core::BorderArrivals arrivals{options_.own, step, {}};
    for (const core::BorderDeparture& d : departures) {
      if (d.to_district == link->district) arrivals.pedestrians.push_back(d.pedestrian);
    }
    const std::string f =
        frame(json{{"type", "step_end"},
                   {"step", step},
                   {"digest", digest},
                   {"arrivals", json::parse(persist::command_args_json(arrivals))}});
    std::lock_guard<std::mutex> lock(link->write_mutex);
    if (!link->socket) {
      link->pending.push_back(f);
      continue;
    }
    asio::error_code ec;
    asio::write(*link->socket, asio::buffer(f), ec);
    if (!ec) bytes_sent_ += f.size();  // a failed write shows as the link's read failing
  }
  // Departures bound for a district that is not a neighbour cannot happen
  // (a lane's successors are in its own district or a neighbour's).
}

std::optional<std::vector<StepEnd>> DistrictLinks::await_step_end(std::uint64_t step,
                                                                  const std::atomic<bool>& stop) {
  const auto began = std::chrono::steady_clock::now();
  struct Timed {  // the barrier's cost, however the wait ends
    DistrictLinks& links;
    std::chrono::steady_clock::time_point began;
    ~Timed() {
      links.wait_ns_ +=
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - began)
                                         .count());
      ++links.waits_;
    }
  } timed{*this, began};
  std::unique_lock<std::mutex> lock(mutex_);
  auto waited_since = began;
  for (;;) {
    if (stop || closing_ || !error_.ok()) return std::nullopt;
    std::vector<std::uint32_t> missing;
    for (auto& link : links_) {
      while (!link->inbound.empty() && link->inbound.front().step < step)
        link->inbound.pop_front();  // before this district's start (a restart): not needed
      if (!link->inbound.empty() && link->inbound.front().step == step) continue;
      if (link->closed) {
        const auto why = link_errors_.find(link->district);
        error_ = core::Status::unavailable(
            "district " + name(link->district) + " " +
            (why != link_errors_.end() ? why->second : std::string("closed its link")) +
            " before its step_end " + std::to_string(step));
        return std::nullopt;
      }
      missing.push_back(link->district);
    }
    if (missing.empty()) break;
    if (arrived_.wait_for(lock, std::chrono::milliseconds(200)) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() - waited_since > kWaitLogEvery) {
      std::string names;
      for (const std::uint32_t d : missing) names += (names.empty() ? "" : ", ") + name(d);
      spdlog::warn("district links: step {} waits for the step_end of district(s) {}", step + 1,
                   names);
      waited_since = std::chrono::steady_clock::now();
    }
  }
  std::vector<StepEnd> out;
  for (auto& link : links_) {
    out.push_back(std::move(link->inbound.front()));
    link->inbound.pop_front();
  }
  return out;
}

bool DistrictLinks::feed(core::World& world, const std::atomic<bool>& stop,
                         std::vector<core::CommandEnvelope>& recorded) {
  auto ends = await_step_end(world.step_index(), stop);
  if (!ends) return false;
  for (StepEnd& end : *ends) {
    if (end.arrivals.pedestrians.empty()) continue;
    core::CommandEnvelope env{core::CommandOrigin{}, std::move(end.arrivals)};
    recorded.push_back(env);
    if (world.submit(std::move(env)) != core::SubmitStatus::Queued) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = core::Status::unavailable("the command inbox is full: the arrivals from district " +
                                         name(end.from) + " at step " +
                                         std::to_string(world.step_index() + 1) +
                                         " cannot be queued (raise command_inbox_capacity)");
      return false;
    }
  }
  return true;
}

core::Status DistrictLinks::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace bustle::app
