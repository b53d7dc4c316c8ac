// Private helpers for copying verified wire tables into SDK types.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "bustle/proto/framing.hpp"
#include "bustle/proto/wire.hpp"

namespace bustle::client::detail {

inline std::string str(const flatbuffers::String* s) {
  return s == nullptr ? std::string() : s->str();
}

// Scalar vectors are copied bytewise (proto::copy_scalar_vector): a verified
// vector's elements need not be aligned for their type.
template <class T>
std::vector<T> to_vector(const flatbuffers::Vector<T>* v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return bustle::proto::copy_scalar_vector(v);
  } else {
    return v == nullptr ? std::vector<T>() : std::vector<T>(v->begin(), v->end());
  }
}

// A generated table's object-API copy (every field the schema has), into the
// generated type or an SDK type derived from it (which adds helpers only).
template <typename Out, typename Table>
Out unpack_into(const Table& table) {
  Out out;
  table.UnPackTo(&out);
  return out;
}
template <typename Table>
typename Table::NativeTableType unpack(const Table& table) {
  return unpack_into<typename Table::NativeTableType>(table);
}

}  // namespace bustle::client::detail
