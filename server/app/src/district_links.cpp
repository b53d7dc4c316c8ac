// Neighbour lockstep between district servers (district_links.hpp).
#include "district_links.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio.hpp>
#include <cassert>
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

// A frame: the 4-byte little-endian length, then the JSON text.
std::string frame_text(const std::string& text) {
  const auto n = static_cast<std::uint32_t>(text.size());
  std::string out(4, '\0');
  for (std::size_t b = 0; b < 4; ++b) out[b] = static_cast<char>(n >> (8 * b));
  return out + text;
}

std::string frame(const json& body) {
  return frame_text(body.dump());
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
  std::unique_ptr<tcp::socket> socket;   // the live connection; null while the link is down
  std::unique_ptr<tcp::socket> joining;  // a connection whose hellos are exchanged
  std::deque<std::pair<std::uint64_t, std::string>> sent;  // (step, frame), the last kResendSteps
  // Under DistrictLinks::mutex_.
  std::deque<StepEnd> inbound;
  bool up = false;
  std::optional<std::uint64_t> last_step;  // of the last StepEnd taken
  std::chrono::steady_clock::time_point down_since = std::chrono::steady_clock::now();
  std::string down_why = "has not connected yet";
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
    if (link->joining) shut(link->joining->native_handle());
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
  next_needed_ = options_.first_step;
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

namespace {

json hello_json(std::uint32_t own, const std::string& scenario, std::uint64_t next_step) {
  return json{
      {"type", "hello"}, {"district", own}, {"scenario", scenario}, {"next_step", next_step}};
}

// A hello's fields, or `why` it is not one.
bool parse_hello(const json& j, std::uint32_t& from, std::string& scenario, std::uint64_t& next,
                 std::string& why) {
  if (j["type"] != "hello" || !j.contains("district") || !j["district"].is_number_unsigned() ||
      !j.contains("scenario") || !j["scenario"].is_string() || !j.contains("next_step") ||
      !j["next_step"].is_number_unsigned()) {
    why = "a first frame that is not a hello with district, scenario and next_step";
    return false;
  }
  from = j["district"].get<std::uint32_t>();
  scenario = j["scenario"].get<std::string>();
  next = j["next_step"].get<std::uint64_t>();
  return true;
}

}  // namespace

// The dialler's hello names a neighbour with a higher index, of this
// scenario, whose link is down; anything else is refused and closed.
void DistrictLinks::handshake(std::size_t accepted) {
  tcp::socket* socket = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    socket = impl_->accepted[accepted].get();
  }
  json hello;
  std::string why, scenario;
  std::uint32_t from = 0;
  std::uint64_t next = 0;
  if (!read_frame(*socket, hello, why, bytes_received_)) return;
  Link* link = nullptr;
  if (!parse_hello(hello, from, scenario, next, why)) {
  } else if (link = from > options_.own ? link_of(from) : nullptr; link == nullptr) {
    why = "a hello from district " + name(from) + ", not a neighbour that dials this one";
  } else if (scenario != options_.scenario_id) {
    why = "district " + name(from) + " runs scenario '" + scenario + "', this one '" +
          options_.scenario_id + "'";
  }
  std::unique_ptr<tcp::socket> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    owned = std::move(impl_->accepted[accepted]);
    if (why.empty() && link->up) why = "a second link from district " + name(from);
  }
  asio::error_code ec;
  if (why.empty()) {
    const std::string reply = frame(hello_json(options_.own, options_.scenario_id, next_needed_));
    asio::write(*owned, asio::buffer(reply), ec);
    if (!ec) bytes_sent_ += reply.size();
  }
  if (!why.empty() || ec) {
    spdlog::error("district links: refused a connection: {}", why.empty() ? ec.message() : why);
    return;  // closes it
  }
  spdlog::info("district links: district {} connected (it needs step_end {} on)", name(from), next);
  {
    std::lock_guard<std::mutex> lock(link->write_mutex);
    link->joining = std::move(owned);
  }
  serve(*link, next);
}

void DistrictLinks::dial_loop(Link& link, DistrictPeer peer) {
  asio::error_code ec;
  const asio::ip::address address = asio::ip::make_address(peer.host, ec);
  if (ec) {
    fail("district " + name(peer.district) + " cannot be dialled at '" + peer.host +
         "': " + ec.message());
    return;
  }
  while (!closing_) {  // each pass: one connection, until it ends
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
    const std::string hello = frame(hello_json(options_.own, options_.scenario_id, next_needed_));
    asio::write(*socket, asio::buffer(hello), ec);
    json reply;
    std::string why, scenario;
    std::uint32_t from = 0;
    std::uint64_t next = 0;
    if (ec || !read_frame(*socket, reply, why, bytes_received_) ||
        !parse_hello(reply, from, scenario, next, why) || from != peer.district ||
        scenario != options_.scenario_id) {
      spdlog::warn("district links: district {} at {}:{}: {}; dialling again", name(peer.district),
                   peer.host, peer.port,
                   ec            ? ec.message()
                   : why.empty() ? "not that district"
                                 : why);
      std::this_thread::sleep_for(kDialRetry);
      continue;
    }
    bytes_sent_ += hello.size();
    spdlog::info("district links: connected to district {} at {}:{} (it needs step_end {} on)",
                 name(peer.district), peer.host, peer.port, next);
    {
      std::lock_guard<std::mutex> lock(link.write_mutex);
      link.joining = std::move(socket);
    }
    serve(link, next);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.ok()) return;  // the district ends
  }
}

// The StepEnds the neighbour still needs go out again first; then the link
// is up (send_step_end writes to it) and its StepEnds are read.
void DistrictLinks::serve(Link& link, std::uint64_t peer_next_step) {
  {
    std::lock_guard<std::mutex> lock(link.write_mutex);
    if (!link.sent.empty() && link.sent.front().first > peer_next_step) {
      fail("district " + name(link.district) + " needs step_end " + std::to_string(peer_next_step) +
           " on, but the oldest this district still has is " +
           std::to_string(link.sent.front().first) + " (kResendSteps)");
      return;
    }
    asio::error_code ec;
    for (const auto& [step, f] : link.sent) {
      if (step < peer_next_step) continue;
      asio::write(*link.joining, asio::buffer(f), ec);
      if (ec) break;
      bytes_sent_ += f.size();
    }
    link.socket = std::move(link.joining);
    if (ec) link.socket.reset();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    link.up = link.socket != nullptr;
  }
  if (link.socket) read_loop(link);
}

// StepEnd frames, in step order, until the connection ends: a repeat (sent
// again after a reconnection) is dropped, a gap ends the district.
void DistrictLinks::read_loop(Link& link) {
  tcp::socket& socket = *link.socket;  // replaced only by serve(), on this link's next connection
  while (!closing_) {
    json j;
    std::string why;
    StepEnd end;
    if (!read_frame(socket, j, why, bytes_received_) ||
        !parse_step_end(j, link.district, end, why)) {
      link_down(link, why);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (link.last_step && end.step <= *link.last_step) continue;  // already taken
    if (link.last_step && end.step != *link.last_step + 1) {
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

void DistrictLinks::link_down(Link& link, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(link.write_mutex);
    if (link.socket) shut(link.socket->native_handle());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  link.up = false;
  link.down_since = std::chrono::steady_clock::now();
  link.down_why = why;
  if (!closing_)
    spdlog::warn("district links: district {} {}; waiting for it", name(link.district), why);
  arrived_.notify_all();
}

void DistrictLinks::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.ok() && !closing_) error_ = core::Status::unavailable(why);
  arrived_.notify_all();
}

void DistrictLinks::send_step_end(std::uint64_t step, std::uint64_t digest,
                                  std::span<const core::BorderArrivals> outbox) {
  core::BorderArrivals none;  // for a neighbour the outbox does not name
  none.from_district = options_.own;
  none.sent_step = step;
  for (auto& link : links_) {
    // World::border_message stamped each with this district and step.
    const core::BorderArrivals& arrivals =
        link->district < outbox.size() ? outbox[link->district] : none;
    assert(arrivals.from_district == options_.own && arrivals.sent_step == step);
    // The arrivals are the command's recorded form, JSON text already: put in
    // as they are, not parsed and printed again.
    std::string f = frame_text("{\"type\":\"step_end\",\"step\":" + std::to_string(step) +
                               ",\"digest\":" + std::to_string(digest) +
                               ",\"arrivals\":" + persist::command_args_json(arrivals) + "}");
    std::lock_guard<std::mutex> lock(link->write_mutex);
    // Kept for a neighbour that comes back (serve()); a step sent again
    // (a restarted district replaying) replaces nothing: the first is kept.
    if (link->sent.empty() || link->sent.back().first < step) {
      link->sent.emplace_back(step, f);
      while (link->sent.size() > kResendSteps) link->sent.pop_front();
    }
    if (!link->socket) continue;  // down: sent when it is back
    asio::error_code ec;
    asio::write(*link->socket, asio::buffer(f), ec);
    if (!ec) bytes_sent_ += f.size();  // a failed write shows as the link's read failing
  }
}

std::optional<std::vector<StepEnd>> DistrictLinks::await_step_end(
    std::uint64_t step, const std::atomic<bool>& stop, const std::function<void()>& idle) {
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
  next_needed_ = step;
  std::unique_lock<std::mutex> lock(mutex_);
  auto logged_at = began;
  for (;;) {
    if (stop || closing_ || !error_.ok()) return std::nullopt;
    std::vector<const Link*> missing;
    for (auto& link : links_) {
      while (!link->inbound.empty() && link->inbound.front().step < step)
        link->inbound.pop_front();  // before this district's start (a resume): not needed
      if (link->inbound.empty() || link->inbound.front().step != step)
        missing.push_back(link.get());
    }
    if (missing.empty()) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - began > options_.wait_limit) {
      const Link& late = *missing.front();
      error_ = core::Status::unavailable(
          "no step_end " + std::to_string(step) + " from district " + name(late.district) +
          " within " + std::to_string(options_.wait_limit.count() / 1000) + " s (" +
          (late.up ? std::string("its link is up") : "it " + late.down_why) + ")");
      return std::nullopt;
    }
    if (now - logged_at > kWaitLogEvery) {
      std::string names;
      for (const Link* l : missing)
        names += (names.empty() ? "" : ", ") + name(l->district) + (l->up ? "" : " (down)");
      spdlog::warn("district links: step {} waits for the step_end of district(s) {}", step + 1,
                   names);
      logged_at = now;
    }
    arrived_.wait_for(lock, idle ? kIdleEvery : std::chrono::milliseconds(200));
    if (idle) {
      lock.unlock();
      idle();
      lock.lock();
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
                         std::vector<core::CommandEnvelope>& recorded,
                         const std::function<void()>& idle) {
  auto ends = await_step_end(world.step_index(), stop, idle);
  if (!ends) return false;
  for (StepEnd& end : *ends) {
    const core::BorderArrivals& a = end.arrivals;
    if (a.pedestrians.empty() && a.returned.empty() && a.vehicles.empty() && a.ghosts.empty() &&
        a.returned_vehicles.empty() && a.crossings.empty())
      continue;
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
