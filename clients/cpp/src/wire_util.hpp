// Private helpers for copying verified wire tables into SDK types.
#pragma once

#include <string>
#include <vector>

#include "bustle/proto/wire.hpp"

namespace bustle::client::detail {

inline std::string str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

template <class T>
std::vector<T> to_vector(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? std::vector<T>() : std::vector<T>(v->begin(), v->end());
}

}  // namespace bustle::client::detail
