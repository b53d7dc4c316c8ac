// DistrictFeed and FeedInbox (district_feed.hpp).
#include "bustle/gateway/district_feed.hpp"

#include <spdlog/spdlog.h>

#include "bustle/client/client.hpp"

namespace bustle::gateway {

namespace {

// The schema's largest budgets (client.fbs RepresentationBudgets): the
// gateway receives every entity of a district up to about 1.1 million.
constexpr client::RepresentationBudgets kWholeDistrict{4096, 65536, 1048576};
constexpr auto kDeltaWait = std::chrono::milliseconds(200);
constexpr auto kSubscribeWait = std::chrono::milliseconds(10000);

// "" or how `w` differs from the city the gateway serves.
std::string welcome_mismatch(const client::WelcomeInfo& w, const CityFacts& city) {
  if (w.scenario_id != city.scenario_id)
    return "serves scenario '" + w.scenario_id + "', the gateway's --config is '" +
           city.scenario_id + "'";
  if (w.step_us != city.step_us)
    return "runs " + std::to_string(w.step_us) + " us steps, the gateway's city " +
           std::to_string(city.step_us) + " us (give the gateway the districts' --rate)";
  if (w.lanes.size() != city.lanes)
    return "has " + std::to_string(w.lanes.size()) + " lanes, the gateway's city " +
           std::to_string(city.lanes);
  if (w.archetypes != city.archetypes) return "names other archetypes than the gateway's city";
  // The gateway's Welcome tells its clients a realtime clock: they pace
  // interpolation by the wall clock, which a fast or manual district breaks.
  if (w.clock_mode != wire::ClockMode::Realtime)
    return std::string("runs a ") + wire::EnumNameClockMode(w.clock_mode) +
           " clock; the gateway serves districts on the realtime clock (bustle-server's default)";
  return {};
}

}  // namespace

FeedInbox::FeedInbox(std::size_t districts, std::size_t depth)
    : queues_(districts), depth_(depth) {}

bool FeedInbox::push(std::size_t d, FeedEvent e) {
  std::unique_lock lock(mu_);
  popped_.wait(lock, [&] { return closed_ || queues_[d].size() < depth_; });
  if (closed_) return false;
  queues_[d].push_back(std::move(e));
  signalled_ = true;
  pushed_.notify_all();
  return true;
}

void FeedInbox::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  pushed_.wait_for(lock, timeout, [&] { return closed_ || signalled_; });
  signalled_ = false;
}

std::optional<std::uint64_t> FeedInbox::front_step(std::size_t d) const {
  std::lock_guard lock(mu_);
  if (queues_[d].empty() || queues_[d].front().kind != FeedEvent::Kind::Delta) return std::nullopt;
  return queues_[d].front().delta.step;
}

bool FeedInbox::empty(std::size_t d) const {
  std::lock_guard lock(mu_);
  return queues_[d].empty();
}

FeedEvent FeedInbox::pop(std::size_t d) {
  std::lock_guard lock(mu_);
  FeedEvent e = std::move(queues_[d].front());
  queues_[d].pop_front();
  popped_.notify_all();
  return e;
}

void FeedInbox::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  pushed_.notify_all();
  popped_.notify_all();
}

DistrictFeed::DistrictFeed(FeedSettings settings, CityFacts city, FeedInbox& inbox)
    : settings_(std::move(settings)), city_(std::move(city)), inbox_(inbox) {}

DistrictFeed::~DistrictFeed() {
  stop();
}

void DistrictFeed::start() {
  thread_ = std::thread([this] { run(); });
}

void DistrictFeed::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void DistrictFeed::run() {
  bool announced_down = false;
  while (!stop_.load()) {
    if (!stream_once(announced_down)) return;
    for (auto waited = std::chrono::milliseconds(0); waited < settings_.retry && !stop_.load();
         waited += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void DistrictFeed::request_interest(FeedInterest interest) {
  std::lock_guard lock(interest_mu_);
  wanted_version_.store(interest.version);
  wanted_ = std::move(interest);
}

FeedInterest DistrictFeed::wanted() {
  std::lock_guard lock(interest_mu_);
  return wanted_;
}

bool DistrictFeed::apply_interest(client::Client& c, const FeedInterest& interest, bool subscribe,
                                  std::string& why) {
  why.clear();
  client::Result<client::CommandReply> r;
  if (subscribe) {
    client::SubscribeParams params;
    params.budgets = kWholeDistrict;
    params.motion_tolerance_mm = 0;
    params.observers = interest.observers;
    r = c.subscribe(params, kSubscribeWait);
  } else {
    client::UpdateInterestParams params;
    params.observers = interest.observers;  // empty: the whole city
    r = c.update_interest(params, kSubscribeWait);
  }
  if (!r.ok()) {
    why = r.message;
    return false;
  }
  // Deltas read while waiting for the answer came before the change.
  while (c.buffered_deltas() > 0) {
    client::Result<client::Delta> d = c.next_delta(std::chrono::milliseconds(0));
    if (!d.ok()) {
      why = d.message;
      return false;
    }
    if (!inbox_.push(settings_.index, FeedEvent{FeedEvent::Kind::Delta, std::move(d.value), {}}))
      return false;
  }
  FeedEvent e{FeedEvent::Kind::Interest, {}, {}};
  e.interest_version = interest.version;
  return inbox_.push(settings_.index, std::move(e));
}

bool DistrictFeed::stream_once(bool& announced_down) {
  const std::string where = "district '" + settings_.district + "' at " + settings_.host + ":" +
                            std::to_string(settings_.port);
  client::ClientOptions o;
  o.host = settings_.host;
  o.port = settings_.port;
  o.token = settings_.token;
  o.client_name = "bustle-gateway";
  client::Client c(o);
  auto lost = [&](const std::string& why) {
    if (!announced_down)
      spdlog::warn("{}: {}; retrying every {} ms", where, why, settings_.retry.count());
    announced_down = true;
    return inbox_.push(settings_.index, FeedEvent{FeedEvent::Kind::Lost, {}, why});
  };
  const auto welcome = c.connect();
  if (!welcome.ok()) return lost(welcome.message);
  if (std::string e = welcome_mismatch(welcome.value, city_); !e.empty()) {
    spdlog::error("{} {}", where, e);
    inbox_.push(settings_.index, FeedEvent{FeedEvent::Kind::Fatal, {}, where + " " + e});
    return false;
  }
  baseline_wanted_.store(false);
  FeedInterest applied = wanted();
  std::string why;
  if (!apply_interest(c, applied, true, why)) return why.empty() ? false : lost(why);
  spdlog::info("{}: streaming (step {})", where, welcome.value.current_step);
  announced_down = false;
  while (!stop_.load()) {
    // Each Delta asks; only a change copies the wanted interest.
    const bool baseline = baseline_wanted_.exchange(false);
    if (baseline || wanted_version_.load() != applied.version) {
      applied = wanted();
      if (!apply_interest(c, applied, baseline, why)) return why.empty() ? false : lost(why);
    }
    client::Result<client::Delta> d = c.next_delta(kDeltaWait);
    if (d.status == client::ClientStatus::Timeout) continue;
    if (!d.ok()) return lost(d.message);
    if (!inbox_.push(settings_.index, FeedEvent{FeedEvent::Kind::Delta, std::move(d.value), {}}))
      return false;
  }
  return false;
}

}  // namespace bustle::gateway
