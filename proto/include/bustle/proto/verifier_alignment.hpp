// Element alignment for the FlatBuffers Verifier's vectors of 8-byte types.
//
// FlatBuffers 2.0 (Debian 12) verifies a vector's 4-byte length field and its
// bounds, but not the alignment of its elements. A builder always aligns a
// vector of doubles, 64-bit integers or 8-byte structs to 8 bytes; a hostile
// frame need not, and every later read of such an element (`Get`, the object
// API's `UnPackTo`, a struct's accessor) would then be a misaligned load:
// undefined behaviour, found by fuzzing the C++ SDK.
//
// These explicit specialisations make the Verifier itself refuse such a
// vector, so whatever passes verification can be read in place by any
// decoder. They must be seen before the generated headers' Verify functions
// are compiled, which is why bustle/proto/wire.hpp (the one includer of the
// generated headers) includes this file first. Invariants:
//   1. Every wire vector whose element type is 8 bytes wide is listed here:
//      double, int64 (long), uint64 (ulong) and the struct Vec2d. A new
//      8-byte struct in the schema adds a line (tests/proto checks the list
//      against the schema's type tables).
//   2. The check is on the element's address; the decoders hand the Verifier
//      payloads aligned to 8 bytes (proto::FrameDecoder), so address and
//      buffer-offset alignment agree.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>

namespace bustle::wire {
struct Vec2d;
}  // namespace bustle::wire

namespace bustle::proto::detail {

// True when an 8-byte element vector's data is 8-byte aligned (or absent).
inline bool elements_aligned_8(const void* vector) {
  const auto data = reinterpret_cast<std::uintptr_t>(vector) + sizeof(flatbuffers::uoffset_t);
  return data % 8 == 0;
}

}  // namespace bustle::proto::detail

namespace flatbuffers {

// SIZE is the element's size in bytes (Vec2d is still incomplete here;
// wire.hpp asserts its size once the generated header has defined it).
#define BUSTLE_VERIFY_VECTOR_ALIGNED_8(T, SIZE)                                         \
  template <>                                                                           \
  inline bool Verifier::VerifyVector<T>(const Vector<T>* const vec) const {             \
    return !vec || (Check(bustle::proto::detail::elements_aligned_8(vec)) &&            \
                    VerifyVectorOrString(reinterpret_cast<const uint8_t*>(vec), SIZE)); \
  }

BUSTLE_VERIFY_VECTOR_ALIGNED_8(double, 8)
BUSTLE_VERIFY_VECTOR_ALIGNED_8(int64_t, 8)
BUSTLE_VERIFY_VECTOR_ALIGNED_8(uint64_t, 8)
BUSTLE_VERIFY_VECTOR_ALIGNED_8(bustle::wire::Vec2d, 16)

#undef BUSTLE_VERIFY_VECTOR_ALIGNED_8

}  // namespace flatbuffers
