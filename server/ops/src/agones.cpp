// The Agones SDK client (agones.hpp): Ready, periodic Health and Shutdown
// posted to the local sidecar with libcurl on a thread of its own; failures
// are logged once per kind and retried, never fatal.
#include "bustle/ops/agones.hpp"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace bustle::ops {
namespace {

// libcurl's global state, initialised once before any thread uses it.
void curl_global_once() {
  static const bool done = [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return true;
  }();
  (void)done;
}

std::size_t discard_body(char*, std::size_t size, std::size_t n, void*) {
  return size * n;
}

}  // namespace

core::StatusOr<std::string> agones_base_url(const char* env_port) {
  unsigned port = 9358;
  if (env_port != nullptr && *env_port != '\0') {
    const std::string text(env_port);
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc() || p != text.data() + text.size() || port == 0 || port > 65535) {
      return core::Status::invalid_argument(
          "AGONES_SDK_HTTP_PORT: expected a port in [1, 65535], got '" + text + "'");
    }
  }
  return "http://127.0.0.1:" + std::to_string(port);
}

AgonesClient::AgonesClient(AgonesSettings settings, std::function<bool()> ready,
                           std::function<bool()> healthy)
    : settings_(std::move(settings)), ready_(std::move(ready)), healthy_(std::move(healthy)) {
  curl_global_once();
  thread_ = std::thread([this] { run(); });
}

AgonesClient::~AgonesClient() {
  stop();
}

core::Status AgonesClient::post(const std::string& path) const {
  return agones_post(settings_.base_url, path);
}

core::Status agones_post(const std::string& base_url, const std::string& path) {
  curl_global_once();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return core::Status::internal("curl_easy_init failed");
  const std::string url = base_url + path;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "{}");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");  // the sidecar is local, never behind a proxy
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK)
    return core::Status::unavailable(std::string("POST ") + url + ": " + curl_easy_strerror(rc));
  if (status < 200 || status >= 300)
    return core::Status::unavailable("POST " + url + ": HTTP " + std::to_string(status));
  return {};
}

namespace {

std::size_t keep_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

core::StatusOr<std::string> agones_get(const std::string& base_url, const std::string& path) {
  curl_global_once();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return core::Status::internal("curl_easy_init failed");
  const std::string url = base_url + path;
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK)
    return core::Status::unavailable(std::string("GET ") + url + ": " + curl_easy_strerror(rc));
  if (status < 200 || status >= 300)
    return core::Status::unavailable("GET " + url + ": HTTP " + std::to_string(status));
  return body;
}

core::StatusOr<AgonesDistrict> agones_wait_for_district(const std::string& base_url,
                                                        std::chrono::milliseconds period) {
  bool ready = false, logged = false;
  for (;;) {
    core::Status sent = agones_post(base_url, ready ? "/health" : "/ready");
    if (sent.ok() && !ready) spdlog::info("agones: Ready sent; waiting for a district allocation");
    ready = ready || sent.ok();
    auto got = ready ? agones_get(base_url, "/gameserver") : core::StatusOr<std::string>(sent);
    if (got.ok()) {
      const nlohmann::json gs = nlohmann::json::parse(*got, nullptr, false);
      if (gs.is_discarded() || !gs.is_object())
        return core::Status::unavailable("agones: GET /gameserver: the answer is not a GameServer");
      const nlohmann::json meta = gs.value("object_meta", nlohmann::json::object());
      const nlohmann::json labels = meta.value("labels", nlohmann::json::object());
      const nlohmann::json notes = meta.value("annotations", nlohmann::json::object());
      if (labels.contains(kAgonesDistrictLabel) && labels[kAgonesDistrictLabel].is_string()) {
        AgonesDistrict d{labels[kAgonesDistrictLabel].get<std::string>(), ""};
        if (notes.contains(kAgonesPeersAnnotation) && notes[kAgonesPeersAnnotation].is_string())
          d.peers = notes[kAgonesPeersAnnotation].get<std::string>();
        spdlog::info("agones: allocated as district '{}' (peers '{}')", d.district, d.peers);
        return d;
      }
    } else if (!logged) {
      spdlog::warn("agones: {} (retrying every {} ms)", got.status().message(), period.count());
      logged = true;
    }
    std::this_thread::sleep_for(period);
  }
}

void AgonesClient::run() {
  bool ready_sent = settings_.ready_sent;
  bool warned = false;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    core::Status sent;
    if (!ready_sent) {
      if (ready_()) {
        sent = post("/ready");
        ready_sent = sent.ok();
        if (ready_sent) spdlog::info("agones: Ready sent to {}", settings_.base_url);
      }
    } else if (healthy_()) {
      sent = post("/health");  // a failure is retried next period
      if (sent.ok()) warned = false;
    }
    if (!sent.ok() && !warned) {
      spdlog::warn("agones: {} (retrying every {} ms)", sent.message(),
                   settings_.health_period.count());
      warned = true;
    }
    lock.lock();
    // Until Ready is sent, poll readiness more often than the health period.
    const auto wait = ready_sent ? settings_.health_period : std::chrono::milliseconds(100);
    cv_.wait_for(lock, wait, [&] { return stopping_; });
  }
}

void AgonesClient::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (const core::Status s = post("/shutdown"); s.ok()) {
    spdlog::info("agones: Shutdown sent");
  } else {
    spdlog::warn("agones: {}", s.message());
  }
}

}  // namespace bustle::ops
