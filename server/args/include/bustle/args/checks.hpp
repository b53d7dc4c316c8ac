// Value checks for the command-line programs' CLI11 options. Each check
// parses an option's text the way the option means it and either stores the
// value or says what it expected and what it got, in one form everywhere:
//
//   --port: expected a port number in [1, 65535], got '70000'
//
// (CLI11 puts the option's name in front; a caller reading an environment
// variable puts "environment BUSTLE_PORT: " there instead).
//
// A check stores as it validates, so an option needs no other callback; a
// repeated option is checked (and stored) once per value, in order, so the
// last value wins unless the store appends.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bustle::args {

// "expected WHAT, got 'TEXT'".
inline std::string expected(std::string_view what, std::string_view text) {
  return "expected " + std::string(what) + ", got '" + std::string(text) + "'";
}

// A whole decimal number (no sign for unsigned types, nothing after it) in
// [lo, hi].
template <class T>
bool parse_whole(std::string_view text, T lo, T hi, T& out) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end || value < lo || value > hi) return false;
  out = value;
  return true;
}

// A finite decimal number (from_chars syntax, nothing after it).
inline bool parse_finite(std::string_view text, double& out) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end || !std::isfinite(value)) return false;
  out = value;
  return true;
}

// The check that runs `store(text)`: "" stores and accepts, anything else is
// the reason for refusing.
using Store = std::function<std::string(const std::string&)>;
inline CLI::Validator storing(Store store) {
  return CLI::Validator([store = std::move(store)](std::string& text) { return store(text); }, "");
}

// A whole number in [lo, hi] stored into `out`; refused as "expected WHAT in
// [lo, hi], got 'TEXT'".
template <class T>
std::string store_whole(const std::string& text, T lo, T hi, T& out, std::string_view what) {
  if (parse_whole(text, lo, hi, out)) return {};
  return expected(
      std::string(what) + " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", text);
}

template <class T>
CLI::Validator whole(T& out, T lo, T hi, std::string what = "an integer") {
  return storing([&out, lo, hi, what](const std::string& text) {
    return store_whole(text, lo, hi, out, what);
  });
}

// Any text but the empty one.
inline CLI::Validator non_empty(std::string& out, std::string what) {
  return storing([&out, what](const std::string& text) {
    if (text.empty()) return expected(what, text);
    out = text;
    return std::string();
  });
}

// The first argument that gives a flag (an option that takes no value) of
// APP or of one of its subcommands a value, worded "--json: takes no value",
// or "" when there is none. CLI11 accepts `--flag=value` by default (so
// `--help=no` printed help, and `--json=no` printed JSON) and, with flag
// overrides disabled, still `--flag=true`; a flag takes no value, and saying
// one is an error. Call it before parsing, on the arguments as given.
inline std::string flag_given_a_value(const CLI::App& app, const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;  // operands follow
    const auto eq = arg.find('=');
    if (arg.size() < 2 || arg[0] != '-' || eq == std::string::npos) continue;
    const std::string name = arg.substr(0, eq);
    std::vector<const CLI::App*> apps{&app};
    for (std::size_t i = 0; i < apps.size(); ++i) {
      const CLI::Option* option = apps[i]->get_option_no_throw(name);
      if (option != nullptr && option->get_expected_max() == 0) return name + ": takes no value";
      for (const CLI::App* sub : apps[i]->get_subcommands([](const CLI::App*) { return true; }))
        apps.push_back(sub);
    }
  }
  return {};
}

}  // namespace bustle::args
