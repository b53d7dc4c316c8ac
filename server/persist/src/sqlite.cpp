// The thin RAII layer over the SQLite C API (sqlite.hpp): connections,
// prepared statements and transactions whose errors are values (SqlError).
#include "bustle/persist/sqlite.hpp"

#include <sqlite3.h>

namespace bustle::persist {

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = o.db_;
    stmt_ = o.stmt_;
    o.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::bind_i64(int i, std::int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Statement& Statement::bind_double(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}
Statement& Statement::bind_text(int i, std::string_view v) {
  sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}
Statement& Statement::bind_blob(int i, std::span<const std::uint8_t> v) {
  // SQLITE_STATIC: callers keep the bytes alive until step() completes, which
  // avoids copying multi-megabyte columns.
  static const std::uint8_t kEmpty = 0;
  sqlite3_bind_blob64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_STATIC);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  error_.code = rc & 0xFF;
  error_.message = sqlite3_errmsg(db_);
  return false;
}

SqlError Statement::run() {
  while (step()) {
  }
  SqlError e = error_;
  sqlite3_reset(stmt_);
  return e;
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  error_ = {};
}

std::int64_t Statement::column_i64(int i) const {
  return sqlite3_column_int64(stmt_, i);
}
double Statement::column_double(int i) const {
  return sqlite3_column_double(stmt_, i);
}
std::string Statement::column_text(int i) const {
  const auto* p = sqlite3_column_text(stmt_, i);
  const int n = sqlite3_column_bytes(stmt_, i);
  return p == nullptr ? std::string()
                      : std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
}
std::size_t Statement::column_bytes(int i) const {
  return static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i));
}
std::vector<std::uint8_t> Statement::column_blob(int i) const {
  const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, i));
  const int n = sqlite3_column_bytes(stmt_, i);
  return p == nullptr ? std::vector<std::uint8_t>() : std::vector<std::uint8_t>(p, p + n);
}
bool Statement::column_is_null(int i) const {
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
}
int Statement::column_type(int i) const {
  return sqlite3_column_type(stmt_, i);
}

Database& Database::operator=(Database&& o) noexcept {
  if (this != &o) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

SqlError Database::make_error(int code, std::string_view context) const {
  SqlError e;
  e.code = code & 0xFF;
  std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  e.message = context.empty() ? msg : std::string(context) + ": " + msg;
  return e;
}

SqlError Database::open(const std::string& path, Mode mode, Database& out) {
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::ReadWriteCreate:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case Mode::ReadWrite:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case Mode::ReadOnly:
      flags |= SQLITE_OPEN_READONLY;
      break;
  }
  Database db;
  db.path_ = path;
  const int rc = sqlite3_open_v2(path.c_str(), &db.db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    SqlError e = db.make_error(rc, "open " + path);
    return e;
  }
  sqlite3_extended_result_codes(db.db_, 0);
  sqlite3_busy_timeout(db.db_, 5000);
  out = std::move(db);
  return {};
}

SqlError Database::exec(std::string_view sql, std::string_view context) {
  char* err = nullptr;
  const std::string s(sql);
  const int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return {};
  SqlError e;
  e.code = rc & 0xFF;
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  e.message = context.empty() ? msg : std::string(context) + ": " + msg;
  return e;
}

Statement Database::prepare(std::string_view sql, SqlError& err) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    err = make_error(rc, "prepare");
    return {};
  }
  err = {};
  return Statement(db_, stmt);
}

std::int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

namespace {
SqlError run_check(Database& db, const char* pragma) {
  SqlError err;
  Statement st = db.prepare(pragma, err);
  if (!err.ok()) return err;
  if (!st.step()) {
    SqlError e = st.error();
    if (e.ok()) e = {SQLITE_CORRUPT, std::string(pragma) + " returned no rows"};
    return e;
  }
  const std::string first = st.column_text(0);
  if (first != "ok") return {SQLITE_CORRUPT, std::string(pragma) + ": " + first};
  return {};
}
}  // namespace

SqlError Database::quick_check() {
  return run_check(*this, "PRAGMA quick_check");
}
SqlError Database::integrity_check() {
  return run_check(*this, "PRAGMA integrity_check");
}

Transaction::Transaction(Database& db) : db_(db) {
  begin_error_ = db_.exec("BEGIN IMMEDIATE", "begin");
}

Transaction::~Transaction() {
  if (!done_ && begin_error_.ok()) db_.exec("ROLLBACK");
}

SqlError Transaction::commit() {
  SqlError e = db_.exec("COMMIT", "commit");
  if (e.ok()) done_ = true;
  return e;
}

}  // namespace bustle::persist
