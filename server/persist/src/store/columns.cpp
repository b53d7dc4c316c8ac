// Named columns and value codecs of the snapshot store (columns.hpp): INSERT
// and SELECT built from one column list, little-endian blobs and JSON text
// decoded with size checks that name the table, row and field.
#include "columns.hpp"

#include <sqlite3.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

namespace bustle::persist::store {

using nlohmann::json;

namespace {
// Programmer errors in a column list or a row's binds: checked in every
// build (a wrong bind would store a field in another column), never reached
// by bad input.
void require(bool holds, const char* what, const char* table, std::string_view column) {
  if (holds) return;
  std::fprintf(stderr, "bustle persist: %s (table %s, column %.*s)\n", what, table,
               static_cast<int>(column.size()), column.data());
  std::abort();
}
}  // namespace

TableColumns::TableColumns(const char* table, std::initializer_list<const char*> names)
    : table_(table), names_(names) {
  require(!names_.empty(), "empty column list", table, "");
  require(names_.size() <= 64, "more than 64 columns (Insert tracks binds in a 64-bit mask)", table,
          "");
}

TableColumns::TableColumns(const TableColumns& base, std::initializer_list<const char*> more)
    : table_(base.table_), names_(base.names_) {
  names_.insert(names_.end(), more.begin(), more.end());
  require(names_.size() <= 64, "more than 64 columns (Insert tracks binds in a 64-bit mask)",
          table_, "");
}

int TableColumns::index(std::string_view name) const {
  for (std::size_t k = 0; k < names_.size(); ++k) {
    if (name == names_[k]) return static_cast<int>(k);
  }
  require(false, "column not in the table's list", table_, name);
  return 0;
}

std::string TableColumns::list() const {
  std::string s;
  for (const char* n : names_) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::string TableColumns::insert_sql() const {
  std::string params;
  for (std::size_t k = 0; k < names_.size(); ++k)
    params += (k ? ", ?" : "?") + std::to_string(k + 1);
  return std::string("INSERT INTO ") + table_ + " (" + list() + ") VALUES (" + params + ")";
}

std::string TableColumns::select_sql(std::string_view tail) const {
  return "SELECT " + list() + " FROM " + table_ + " WHERE snapshot_id = ?1" + std::string(tail);
}

IdBlobs::IdBlobs(const std::vector<core::EntityId>& ids)
    : index(ids.size()), generation(ids.size()) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    index[i] = ids[i].index;
    generation[i] = ids[i].generation;
  }
}

std::string encode_counts(std::span<const std::uint64_t> counts) {
  return json(std::vector<std::uint64_t>(counts.begin(), counts.end())).dump();
}

bool decode_counts(std::string_view text, std::span<std::uint64_t> out, std::uint64_t max) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array() || j.size() != out.size()) return false;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (!j[k].is_number_unsigned() || j[k].get<std::uint64_t>() > max) return false;
    out[k] = j[k].get<std::uint64_t>();
  }
  return true;
}

template <class T>
std::string encode_ints(const std::vector<T>& values) {
  return json(values).dump();
}

template <class T>
bool decode_ints(std::string_view text, std::vector<T>& out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return false;
  out.clear();
  for (const json& v : j) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
        return false;
    } else if (v.get<std::int64_t>() < static_cast<std::int64_t>(std::numeric_limits<T>::min())) {
      return false;
    }
    out.push_back(v.get<T>());
  }
  return true;
}

template std::string encode_ints(const std::vector<std::int32_t>&);
template std::string encode_ints(const std::vector<std::uint32_t>&);
template std::string encode_ints(const std::vector<std::uint64_t>&);
template bool decode_ints(std::string_view, std::vector<std::int32_t>&);
template bool decode_ints(std::string_view, std::vector<std::uint32_t>&);
template bool decode_ints(std::string_view, std::vector<std::uint64_t>&);

namespace {
template <class T>
std::string pairs_text(std::span<const std::pair<T, T>> pairs) {
  json j = json::array();
  for (const auto& [a, b] : pairs) j.push_back(json::array({a, b}));
  return j.dump();
}

template <class T>
bool parse_pairs(std::string_view text, std::vector<std::pair<T, T>>& out,
                 bool (json::*is_kind)() const) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return false;
  out.clear();
  for (const json& p : j) {
    if (!p.is_array() || p.size() != 2 || !(p[0].*is_kind)() || !(p[1].*is_kind)()) return false;
    out.emplace_back(p[0].get<T>(), p[1].get<T>());
  }
  return true;
}
}  // namespace

std::string encode_pairs(std::span<const std::pair<double, double>> pairs) {
  return pairs_text(pairs);
}
std::string encode_pairs(std::span<const std::pair<std::uint32_t, std::uint32_t>> pairs) {
  return pairs_text(pairs);
}
bool decode_pairs(std::string_view text, std::vector<std::pair<double, double>>& out) {
  return parse_pairs(text, out, &json::is_number);
}
bool decode_pairs(std::string_view text,
                  std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) {
  return parse_pairs(text, out, &json::is_number_unsigned);
}

std::string encode_strings(const std::vector<std::string>& values) {
  return json(values).dump();
}

bool decode_strings(std::string_view text, std::vector<std::string>& out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return false;
  out.clear();
  for (const json& s : j) {
    if (!s.is_string()) return false;
    out.push_back(s.get<std::string>());
  }
  return true;
}

std::string encode_named_counts(const NamedCounts& counts) {
  json j = json::object();
  for (const auto& [name, v] : counts.scalars) j[name] = v;
  for (const auto& [name, v] : counts.arrays) j[name] = v;
  return j.dump();
}

bool decode_named_counts(std::string_view text, NamedCounts& counts) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  for (auto& [name, v] : counts.scalars) {
    const auto it = j.find(name);
    if (it == j.end() || !it->is_number_unsigned()) return false;
    v = it->get<std::uint64_t>();
  }
  for (auto& [name, v] : counts.arrays) {
    const auto it = j.find(name);
    if (it == j.end()) return false;
    if (!decode_counts(it->dump(), v)) return false;
  }
  return true;
}

Insert::Insert(Database& db, const TableColumns& cols, SqlError& err)
    : cols_(&cols), st_(db.prepare(cols.insert_sql(), err)) {}

int Insert::mark(const char* column) {
  const int k = cols_->index(column);
  require((bound_ & (std::uint64_t{1} << k)) == 0, "column bound twice in one row", cols_->table(),
          column);
  bound_ |= std::uint64_t{1} << k;
  return k + 1;
}

Insert& Insert::i64(const char* column, std::int64_t v) {
  st_.bind_i64(mark(column), v);
  return *this;
}
Insert& Insert::f64(const char* column, double v) {
  st_.bind_double(mark(column), v);
  return *this;
}
Insert& Insert::text(const char* column, std::string_view v) {
  st_.bind_text(mark(column), v);
  return *this;
}
Insert& Insert::bytes(const char* column, std::span<const std::uint8_t> v) {
  st_.bind_blob(mark(column), v);
  return *this;
}

Insert& Insert::null(const char* column) {
  st_.bind_null(mark(column));
  return *this;
}

SqlError Insert::run() {
  const std::size_t n = cols_->size();
  require(bound_ == (n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1),
          "a listed column was not bound", cols_->table(), "");
  SqlError e = st_.run();
  st_.reset();
  bound_ = 0;
  return e;
}

std::int64_t RowReader::integer(const char* field, std::int64_t lo, std::int64_t hi) {
  const int col = cols_.index(field);
  const std::int64_t v = st_.column_i64(col);
  if (st_.column_type(col) != SQLITE_INTEGER) {
    fail(field, "expected an integer");
  } else if (v < lo || v > hi) {
    fail(field, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  }
  return v;
}

double RowReader::f64(const char* field) {
  const int col = cols_.index(field);
  const int type = st_.column_type(col);
  if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) fail(field, "expected a number");
  return st_.column_double(col);
}

void RowReader::ids(const char* index_field, const char* generation_field, std::size_t count,
                    std::vector<core::EntityId>& out) {
  std::vector<std::uint32_t> index, generation;
  blob(index_field, count, index);
  blob(generation_field, count, generation);
  if (!ok()) return;
  assert(index.size() == count && generation.size() == count);
  out.resize(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = {index[i], generation[i]};
}

void RowReader::fail(std::string field, std::string message) {
  if (failed_) return;
  failed_ = true;
  field_ = std::move(field);
  message_ = std::move(message);
}

}  // namespace bustle::persist::store
