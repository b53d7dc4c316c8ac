// Named columns for the snapshot store's tables: each table's columns are
// listed once (a TableColumns), and both the INSERT that writes a row and the
// SELECT that reads it name them from that list, so a migration that adds or
// reorders a column cannot shift a field silently. Also the one codec per
// kind of column value: little-endian blobs of fixed-size elements, and JSON
// text (fixed-length count arrays, integer lists, pairs, string lists).
//
// Invariants:
//   1. A column name passed to Insert or RowReader is in the table's list
//      (asserted: a misspelt name is a programmer error).
//   2. Insert::run() binds every listed column exactly once per row
//      (asserted where the row is written; RowReader reads by the same names).
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bustle/core/entity_id.hpp"
#include "bustle/persist/sqlite.hpp"

namespace bustle::persist::store {

static_assert(std::endian::native == std::endian::little,
              "blob columns are little-endian; add byte swapping for big-endian hosts");

// The columns of one table, in the order the SQL names them.
class TableColumns {
 public:
  TableColumns(const char* table, std::initializer_list<const char*> names);
  // `base`'s columns and then `more` (a table a later migration widened).
  TableColumns(const TableColumns& base, std::initializer_list<const char*> more);
  const char* table() const { return table_; }
  std::size_t size() const { return names_.size(); }
  const std::vector<const char*>& names() const { return names_; }
  // 0-based position of `name` in this list [Limit: name must be listed].
  int index(std::string_view name) const;
  // "a, b, c"
  std::string list() const;
  // "INSERT INTO t (a, b) VALUES (?1, ?2)"
  std::string insert_sql() const;
  // "SELECT a, b FROM t WHERE snapshot_id = ?1" plus `tail` (e.g. " ORDER BY b").
  std::string select_sql(std::string_view tail = {}) const;

 private:
  const char* table_;
  std::vector<const char*> names_;
};

// Every table the snapshot store writes, for the schema check (tests).
std::vector<const TableColumns*> all_tables();

// Blob codec: a vector of fixed-size elements as little-endian bytes.
template <class T>
std::span<const std::uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T)};
}
// False if the blob is not exactly count * sizeof(T) bytes.
template <class T>
bool decode_blob(const std::vector<std::uint8_t>& blob, std::size_t count, std::vector<T>& out) {
  if (blob.size() != count * sizeof(T)) return false;
  out.resize(count);
  if (count > 0) std::memcpy(out.data(), blob.data(), blob.size());
  return true;
}

// EntityIds as two u32 blob columns (<x>_index, <x>_generation).
struct IdBlobs {
  explicit IdBlobs(const std::vector<core::EntityId>& ids);
  std::vector<std::uint32_t> index;
  std::vector<std::uint32_t> generation;
};

// JSON codecs, one per kind of JSON column.
// A fixed-length array of unsigned counts: "[1,2,3]".
std::string encode_counts(std::span<const std::uint64_t> counts);
// False unless `text` is an array of exactly out.size() unsigned integers
// each <= max.
bool decode_counts(std::string_view text, std::span<std::uint64_t> out,
                   std::uint64_t max = UINT64_MAX);
// A variable-length list of integers: "[-1,4]".
template <class T>
std::string encode_ints(const std::vector<T>& values);
// False unless `text` is an array of integers that each fit T.
template <class T>
bool decode_ints(std::string_view text, std::vector<T>& out);
// A list of pairs: "[[a,b],...]".
std::string encode_pairs(std::span<const std::pair<double, double>> pairs);
std::string encode_pairs(std::span<const std::pair<std::uint32_t, std::uint32_t>> pairs);
bool decode_pairs(std::string_view text, std::vector<std::pair<double, double>>& out);
bool decode_pairs(std::string_view text, std::vector<std::pair<std::uint32_t, std::uint32_t>>& out);
// A list of strings: "[\"a\",\"b\"]".
std::string encode_strings(const std::vector<std::string>& values);
bool decode_strings(std::string_view text, std::vector<std::string>& out);
// A flat object of named unsigned counts and count arrays (vehicle_step_stats).
struct NamedCounts {
  std::vector<std::pair<std::string, std::uint64_t>> scalars;
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> arrays;
};
std::string encode_named_counts(const NamedCounts& counts);
// Fills the values of the names already in `counts` (arrays keep their
// length); false when one is missing, of the wrong length, or not a count.
bool decode_named_counts(std::string_view text, NamedCounts& counts);

// One INSERT whose values are bound by column name.
class Insert {
 public:
  Insert() = default;
  // Prepares `cols.insert_sql()`; err is set on failure.
  Insert(Database& db, const TableColumns& cols, SqlError& err);

  Insert& i64(const char* column, std::int64_t v);
  Insert& u64(const char* column, std::uint64_t v) {
    return i64(column, static_cast<std::int64_t>(v));
  }
  Insert& f64(const char* column, double v);
  Insert& text(const char* column, std::string_view v);
  // Blobs are bound without a copy (SQLITE_STATIC): `v` must outlive run(),
  // so a temporary is refused at compile time.
  template <class T>
  Insert& blob(const char* column, const std::vector<T>& v) {
    return bytes(column, as_bytes(v));
  }
  template <class T>
  Insert& blob(const char* column, const std::vector<T>&& v) = delete;
  Insert& bytes(const char* column, std::span<const std::uint8_t> v);
  Insert& null(const char* column);
  // Steps the statement (every column must be bound) and resets it for the next row.
  SqlError run();

 private:
  int mark(const char* column);
  const TableColumns* cols_ = nullptr;
  Statement st_;
  std::uint64_t bound_ = 0;
};

// True when every column holds n entries: the shape of a store's columns.
// Writers assert it of what they are given (a store with a short column
// would save a snapshot that can never load); readers of what they read.
template <class... Columns>
bool all_sized(std::size_t n, const Columns&... columns) {
  return ((columns.size() == n) && ...);
}

// Reads the columns of one SELECTed row by name, with type and range checks,
// remembering the first bad field so the caller can name it in its error.
class RowReader {
 public:
  RowReader(const Statement& st, const TableColumns& cols) : st_(st), cols_(cols) {}

  std::int64_t integer(const char* field, std::int64_t lo, std::int64_t hi);
  std::uint8_t u8(const char* field, std::int64_t hi = UINT8_MAX) {
    return static_cast<std::uint8_t>(integer(field, 0, hi));
  }
  std::uint32_t u32(const char* field) {
    return static_cast<std::uint32_t>(integer(field, 0, UINT32_MAX));
  }
  std::int32_t i32(const char* field, std::int64_t lo = INT32_MIN) {
    return static_cast<std::int32_t>(integer(field, lo, INT32_MAX));
  }
  // Unsigned 64-bit values are stored as their signed bit pattern: any integer is valid.
  std::uint64_t u64(const char* field) {
    return static_cast<std::uint64_t>(integer(field, INT64_MIN, INT64_MAX));
  }
  double f64(const char* field);
  bool flag(const char* field) { return integer(field, 0, 1) != 0; }
  std::string text(const char* field) const { return st_.column_text(cols_.index(field)); }
  // A blob of `count` fixed-size elements ("blob size does not match <count_field>").
  template <class T>
  void blob(const char* field, std::size_t count, std::vector<T>& out,
            const char* count_field = "count") {
    if (!decode_blob(st_.column_blob(cols_.index(field)), count, out)) {
      fail(field, std::string("blob size does not match ") + count_field);
      return;
    }
    assert(out.size() == count);  // Postcondition: decoded means all of it.
  }
  // Two u32 blobs of `count` elements joined into EntityIds.
  void ids(const char* index_field, const char* generation_field, std::size_t count,
           std::vector<core::EntityId>& out);
  std::size_t bytes_size(const char* field) const { return st_.column_bytes(cols_.index(field)); }
  // Records a failure found by the caller (a JSON column that did not parse).
  void fail(std::string field, std::string message);

  bool ok() const { return !failed_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  const Statement& st_;
  const TableColumns& cols_;
  bool failed_ = false;
  std::string field_;
  std::string message_;
};

}  // namespace bustle::persist::store
