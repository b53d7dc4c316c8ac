// The snapshot store's shared table helpers (tables.hpp): errors naming the
// file, table, row and field, and the row keys the per-subsystem table files
// use.
#include "tables.hpp"

#include <cassert>

namespace bustle::persist::store {

std::string snapshot_row(std::int64_t id) {
  return "snapshot_id=" + std::to_string(id);
}

StoreError Tables::error(std::string table, std::string row, std::string field, std::string message,
                         int code) const {
  return StoreError{path_, std::move(table), std::move(row), std::move(field), std::move(message),
                    code};
}

StoreError Tables::sql_error(const SqlError& e, std::string table, std::string row) const {
  return error(std::move(table), std::move(row), "", e.message, e.code);
}

StoreError Tables::row_error(const TableColumns& cols, const std::string& row,
                             const RowReader& rr) const {
  return error(cols.table(), row, rr.field(), rr.message());
}

StoreError Tables::prepare(const TableColumns& cols, Insert& out) {
  SqlError err;
  out = Insert(db_, cols, err);
  if (!err.ok()) return sql_error(err, cols.table());
  return {};
}

StoreError Tables::run(Insert& ins, const TableColumns& cols, const std::string& row) {
  if (SqlError e = ins.run(); !e.ok()) return sql_error(e, cols.table(), row);
  return {};
}

StoreError Tables::one_row(const TableColumns& cols, std::int64_t id, const std::string& row,
                           Statement& st, const char* missing) {
  SqlError err;
  st = db_.prepare(cols.select_sql(), err);
  if (!err.ok()) return sql_error(err, cols.table());
  st.bind_i64(1, id);
  if (!st.step()) {
    if (!st.error().ok()) return sql_error(st.error(), cols.table(), row);
    return error(cols.table(), row, "", missing);
  }
  return {};
}

StoreError Tables::blob_row(const TableColumns& cols, std::int64_t id, const std::string& row,
                            Statement& st, std::size_t& n) {
  if (StoreError e = one_row(cols, id, row, st); !e.ok()) return e;
  RowReader rr(st, cols);
  const std::int64_t count = rr.integer("count", 0, 1 << 24);
  if (!rr.ok()) return error(cols.table(), row, "count", "out of range");
  n = static_cast<std::size_t>(count);
  assert(n <= std::size_t{1} << 24);  // Postcondition: the range just checked.
  return {};
}

StoreError Tables::each_row(
    const TableColumns& cols, const char* order, std::int64_t id, const std::string& row,
    const std::function<StoreError(RowReader&, const Statement&)>& read_row) {
  SqlError err;
  Statement st = db_.prepare(cols.select_sql(std::string(" ORDER BY ") + order), err);
  if (!err.ok()) return sql_error(err, cols.table());
  st.bind_i64(1, id);
  while (st.step()) {
    RowReader rr(st, cols);
    if (StoreError e = read_row(rr, st); !e.ok()) return e;
  }
  if (!st.error().ok()) return sql_error(st.error(), cols.table(), row);
  return {};
}

StoreError Tables::read_rows(const TableColumns& cols, const char* key, const std::string& filter,
                             std::int64_t id, const std::string& row, const RowCallback& read_row,
                             const char* gap) {
  SqlError err;
  Statement st = db_.prepare(
      cols.select_sql((filter.empty() ? "" : " AND " + filter) + " ORDER BY " + key), err);
  if (!err.ok()) return sql_error(err, cols.table());
  st.bind_i64(1, id);
  const std::string prefix = row + (filter.empty() ? "" : " " + filter) + " " + key + "=";
  const int key_col = cols.index(key);
  for (std::int64_t expected = 0; st.step(); ++expected) {
    const std::string label = prefix + std::to_string(st.column_i64(key_col));
    if (st.column_i64(key_col) != expected) return error(cols.table(), label, key, gap);
    RowReader rr(st, cols);
    read_row(rr, label);
    if (!rr.ok()) return row_error(cols, label, rr);
  }
  if (!st.error().ok()) return sql_error(st.error(), cols.table(), row);
  return {};
}

}  // namespace bustle::persist::store
