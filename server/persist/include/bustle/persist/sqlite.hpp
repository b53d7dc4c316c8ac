// A thin RAII layer over the SQLite C API: a connection, prepared statements,
// transactions. Errors are values (SqlError) carrying SQLite's code and
// message plus what we were doing, never exceptions; callers turn them into
// user-facing errors that name the file, table and field.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace bustle::persist {

struct SqlError {
  int code = 0;         // SQLite primary result code (SQLITE_FULL, SQLITE_CORRUPT, ...)
  std::string message;  // "<context>: <sqlite message>"
  bool ok() const { return code == 0; }
};

class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds are 1-based like SQLite's. u64 values are stored as their signed
  // 64-bit bit pattern (SQLite integers are signed).
  Statement& bind_i64(int i, std::int64_t v);
  Statement& bind_u64(int i, std::uint64_t v) { return bind_i64(i, static_cast<std::int64_t>(v)); }
  Statement& bind_double(int i, double v);
  Statement& bind_text(int i, std::string_view v);
  Statement& bind_blob(int i, std::span<const std::uint8_t> v);
  Statement& bind_null(int i);

  // Returns true while a row is available; false when done. On error, returns
  // false and error() is set.
  bool step();
  SqlError run();  // step to completion (for statements without rows)
  void reset();
  const SqlError& error() const { return error_; }

  std::int64_t column_i64(int i) const;
  std::uint64_t column_u64(int i) const { return static_cast<std::uint64_t>(column_i64(i)); }
  double column_double(int i) const;
  std::string column_text(int i) const;
  std::vector<std::uint8_t> column_blob(int i) const;
  std::size_t column_bytes(int i) const;  // size of a blob or text column, without copying it
  bool column_is_null(int i) const;
  int column_type(int i) const;  // SQLITE_INTEGER, SQLITE_BLOB, ...

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  SqlError error_;
};

class Database {
 public:
  enum class Mode { ReadWriteCreate, ReadWrite, ReadOnly };

  Database() = default;
  Database(Database&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
  Database& operator=(Database&& o) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  static SqlError open(const std::string& path, Mode mode, Database& out);

  SqlError exec(std::string_view sql, std::string_view context = {});
  // Prepares; on failure returns an empty Statement and sets err.
  Statement prepare(std::string_view sql, SqlError& err);
  std::int64_t last_insert_rowid() const;

  // Runs `PRAGMA quick_check`; returns ok or the first problem reported.
  SqlError quick_check();
  SqlError integrity_check();

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  bool is_open() const { return db_ != nullptr; }

 private:
  SqlError make_error(int code, std::string_view context) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

// RAII transaction: BEGIN IMMEDIATE on construction, ROLLBACK unless commit()
// succeeded.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  const SqlError& begin_error() const { return begin_error_; }
  SqlError commit();

 private:
  Database& db_;
  SqlError begin_error_;
  bool done_ = false;
};

}  // namespace bustle::persist
