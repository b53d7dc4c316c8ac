// The SQLite wrapper (server/persist/src/sqlite.cpp): errors are values that
// carry SQLite's primary code and say what was being done; values round-trip
// through binds and columns; transactions roll back unless committed.
#include "bustle/persist/sqlite.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace bustle::persist;
namespace fs = std::filesystem;

namespace {

struct TempFile {
  fs::path path = fs::temp_directory_path() / ("bustle-sqlite-test-" + std::to_string(::getpid()) +
                                               "-" + std::to_string(next()) + ".db");
  ~TempFile() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      fs::remove(path.string() + suffix, ec);
  }
  static int next() {
    static int n = 0;
    return n++;
  }
};

Database open_rw(const TempFile& f) {
  Database db;
  const SqlError e = Database::open(f.path.string(), Database::Mode::ReadWriteCreate, db);
  INFO(e.message);
  REQUIRE(e.ok());
  REQUIRE(db.is_open());
  return db;
}

std::int64_t count_rows(Database& db, const char* table) {
  SqlError err;
  Statement q = db.prepare(std::string("SELECT count(*) FROM ") + table, err);
  REQUIRE(err.ok());
  REQUIRE(q.step());
  return q.column_i64(0);
}

}  // namespace

TEST_CASE("opening a missing file read-only fails with SQLite's code and the path") {
  TempFile f;
  Database db;
  const SqlError e = Database::open(f.path.string(), Database::Mode::ReadOnly, db);
  CHECK_FALSE(e.ok());
  CHECK(e.code == SQLITE_CANTOPEN);
  CHECK(e.message.find(f.path.string()) != std::string::npos);
  CHECK_FALSE(db.is_open());
  CHECK_FALSE(fs::exists(f.path));  // read-only never creates
}

TEST_CASE("every column type round-trips through binds, u64 above INT64_MAX included") {
  TempFile f;
  Database db = open_rw(f);
  REQUIRE(db.exec("CREATE TABLE t (i INTEGER, u INTEGER, d REAL, s TEXT, b BLOB, n INTEGER)").ok());
  SqlError err;
  Statement ins = db.prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6)", err);
  REQUIRE(err.ok());
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max() - 7;
  const std::vector<std::uint8_t> blob{0, 1, 2, 255, 0};
  ins.bind_i64(1, -42).bind_u64(2, big).bind_double(3, 0.1).bind_text(4,
                                                                      std::string_view("a\0b", 3));
  ins.bind_blob(5, blob).bind_null(6);
  REQUIRE(ins.run().ok());
  CHECK(db.last_insert_rowid() == 1);

  Statement sel = db.prepare("SELECT i, u, d, s, b, n FROM t", err);
  REQUIRE(err.ok());
  REQUIRE(sel.step());
  CHECK(sel.column_i64(0) == -42);
  CHECK(sel.column_u64(1) == big);
  CHECK(sel.column_double(2) == 0.1);
  CHECK(sel.column_text(3) == std::string("a\0b", 3));
  CHECK(sel.column_blob(4) == blob);
  CHECK(sel.column_is_null(5));
  CHECK(sel.column_type(4) == SQLITE_BLOB);
  CHECK_FALSE(sel.step());  // one row only
  CHECK(sel.error().ok());
}

TEST_CASE("a bad statement or a broken constraint is an error value naming the context") {
  TempFile f;
  Database db = open_rw(f);
  SECTION("prepare") {
    SqlError err;
    Statement s = db.prepare("SELEKT 1", err);
    CHECK(err.code == SQLITE_ERROR);
    CHECK(err.message.find("syntax error") != std::string::npos);
  }
  SECTION("exec carries the caller's context") {
    const SqlError e = db.exec("INSERT INTO missing VALUES (1)", "writing table missing");
    CHECK(e.code == SQLITE_ERROR);
    CHECK(e.message.rfind("writing table missing", 0) == 0);
    CHECK(e.message.find("no such table") != std::string::npos);
  }
  SECTION("a constraint failure in run() and in step()") {
    REQUIRE(db.exec("CREATE TABLE u (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
    REQUIRE(db.exec("INSERT INTO u VALUES (1, 'a')").ok());
    SqlError err;
    Statement ins = db.prepare("INSERT INTO u VALUES (?1, ?2)", err);
    REQUIRE(err.ok());
    ins.bind_i64(1, 1).bind_text(2, "again");
    const SqlError dup = ins.run();
    CHECK(dup.code == SQLITE_CONSTRAINT);
    ins.reset();
    ins.bind_i64(1, 2).bind_null(2);
    CHECK_FALSE(ins.step());
    CHECK(ins.error().code == SQLITE_CONSTRAINT);
    CHECK(count_rows(db, "u") == 1);  // nothing half-written
  }
}

TEST_CASE("a transaction rolls back unless committed") {
  TempFile f;
  Database db = open_rw(f);
  REQUIRE(db.exec("CREATE TABLE t (k INTEGER)").ok());
  {
    Transaction tx(db);
    REQUIRE(tx.begin_error().ok());
    REQUIRE(db.exec("INSERT INTO t VALUES (1)").ok());
  }  // no commit: rolled back
  CHECK(count_rows(db, "t") == 0);
  {
    Transaction tx(db);
    REQUIRE(db.exec("INSERT INTO t VALUES (2)").ok());
    REQUIRE(tx.commit().ok());
  }
  CHECK(count_rows(db, "t") == 1);
  // Still there for another connection: the commit reached the file.
  Database other;
  REQUIRE(Database::open(f.path.string(), Database::Mode::ReadOnly, other).ok());
  CHECK(count_rows(other, "t") == 1);
}

TEST_CASE("a full database fails the write with SQLITE_FULL and keeps what was committed") {
  TempFile f;
  Database db = open_rw(f);
  REQUIRE(db.exec("CREATE TABLE t (b BLOB)").ok());
  REQUIRE(db.exec("INSERT INTO t VALUES (x'00')").ok());
  SqlError err;
  Statement pages = db.prepare("PRAGMA page_count", err);
  REQUIRE(pages.step());
  REQUIRE(db.exec("PRAGMA max_page_count=" + std::to_string(pages.column_i64(0) + 2)).ok());
  const std::vector<std::uint8_t> big(64 * 1024, 7);
  SqlError full;
  {
    Transaction tx(db);
    Statement ins = db.prepare("INSERT INTO t VALUES (?1)", err);
    REQUIRE(err.ok());
    ins.bind_blob(1, big);
    full = ins.run();
  }
  CHECK(full.code == SQLITE_FULL);
  CHECK(count_rows(db, "t") == 1);
  CHECK(db.quick_check().ok());
}

TEST_CASE("writing through a read-only connection fails with SQLITE_READONLY") {
  TempFile f;
  {
    Database db = open_rw(f);
    REQUIRE(db.exec("CREATE TABLE t (k INTEGER)").ok());
  }
  Database ro;
  REQUIRE(Database::open(f.path.string(), Database::Mode::ReadOnly, ro).ok());
  const SqlError e = ro.exec("INSERT INTO t VALUES (1)", "insert");
  CHECK(e.code == SQLITE_READONLY);
}

TEST_CASE("a file that is not a database is refused, not silently recreated") {
  TempFile f;
  {
    std::ofstream out(f.path, std::ios::binary);
    out << std::string(8192, 'x');
  }
  Database db;
  SqlError e = Database::open(f.path.string(), Database::Mode::ReadWrite, db);
  if (e.ok()) e = db.quick_check();  // SQLite may defer reading the header
  CHECK(e.code == SQLITE_NOTADB);
  CHECK(fs::file_size(f.path) == 8192);  // untouched
}

TEST_CASE("a moved-from database is closed and its statements stay usable on the new owner") {
  TempFile f;
  Database a = open_rw(f);
  Database b(std::move(a));
  CHECK_FALSE(a.is_open());
  REQUIRE(b.is_open());
  CHECK(b.path() == f.path.string());
  CHECK(b.exec("CREATE TABLE t (k INTEGER)").ok());
}
