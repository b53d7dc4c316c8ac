// Log set-up for bustle-server (logging.hpp): spdlog to stderr with UTC
// timestamps, as text or one JSON object per line, the leading event name of
// a lifecycle message split into its own field.
#include "bustle/ops/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace bustle::ops {

void split_event(std::string_view message, std::string_view& event, std::string_view& rest) {
  event = {};
  rest = message;
  std::size_t i = 0;
  if (message.empty() || message[0] < 'a' || message[0] > 'z') return;
  while (i < message.size() && ((message[i] >= 'a' && message[i] <= 'z') ||
                                (message[i] >= '0' && message[i] <= '9') || message[i] == '_')) {
    ++i;
  }
  if (i + 1 < message.size() && message[i] == ':' && message[i + 1] == ' ') {
    event = message.substr(0, i);
    rest = message.substr(i + 2);
  }
}

void append_json_escaped(std::string_view text, std::string& out) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
}

namespace {

// %* in the JSON pattern: "event":"...","msg":"..." (or just "msg").
class JsonPayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view event;
    std::string_view rest;
    split_event(std::string_view(msg.payload.data(), msg.payload.size()), event, rest);
    std::string out;
    out.reserve(rest.size() + 32);
    if (!event.empty()) {
      out += "\"event\":\"";
      out += event;
      out += "\",";
    }
    out += "\"msg\":\"";
    append_json_escaped(rest, out);
    out += '"';
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonPayload>();
  }
};

}  // namespace

void setup_logging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_color_mt("bustle");
  spdlog::set_default_logger(logger);
  if (format == "json") {
    logger->set_formatter([] {
      auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
      f->add_flag<JsonPayload>('*').set_pattern(
          R"({"ts":"%Y-%m-%dT%H:%M:%S.%e+00:00","level":"%l",%*})");
      return f;
    }());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e+00:00 %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace bustle::ops
