// Structure-aware mutation for the fuzz targets whose input is a whole SQLite
// file (snapshots, recordings). Byte mutation of such a file mostly breaks
// the page format, so the store stops at quick_check and the row decoders
// and restore validation are rarely reached. This mutator opens the input as
// a database in memory (sqlite3_deserialize), changes it through SQL, and
// writes it back (sqlite3_serialize), so most mutants are well-formed files
// whose rows are wrong in one place:
//
//   - one value of one row set to a boundary integer, a value of another row
//     of the same column, NULL, or (blobs and text) the value with bytes
//     changed by libFuzzer's own mutator;
//   - a row deleted, or copied over another row's values.
//
// Half of the calls, and every input that is not a database, take plain
// byte mutation (LLVMFuzzerMutate); all of them with BUSTLE_FUZZ_BYTES_ONLY=1
// in the environment (to compare the two). Only in the libFuzzer build
// (BUSTLE_LIBFUZZER): the replay build of the targets never mutates.
#pragma once

#if defined(BUSTLE_LIBFUZZER)

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace bustle::fuzz {

class SqliteMutator {
 public:
  // The libFuzzer custom-mutator contract: mutate data[0, size) in place
  // (at most max_size bytes), return the new size.
  static std::size_t mutate(std::uint8_t* data, std::size_t size, std::size_t max_size,
                            unsigned seed) {
    static const bool bytes_only = std::getenv("BUSTLE_FUZZ_BYTES_ONLY") != nullptr &&
                                   std::string(std::getenv("BUSTLE_FUZZ_BYTES_ONLY")) == "1";
    std::minstd_rand rng(seed);
    if (bytes_only || rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
    SqliteMutator m(rng);
    if (!m.open(data, size) || !m.mutate_once()) return LLVMFuzzerMutate(data, size, max_size);
    return m.write_back(data, max_size, size);
  }

 private:
  explicit SqliteMutator(std::minstd_rand& rng) : rng_(rng) {}
  ~SqliteMutator() { sqlite3_close(db_); }

  struct Column {
    std::string name;
    bool key = false;
  };

  bool open(const std::uint8_t* data, std::size_t size) {
    if (size < 512 || std::memcmp(data, "SQLite format 3", 15) != 0) return false;
    if (sqlite3_open(":memory:", &db_) != SQLITE_OK) return false;
    auto* copy = static_cast<std::uint8_t*>(sqlite3_malloc64(size));
    if (copy == nullptr) return false;
    std::memcpy(copy, data, size);
    return sqlite3_deserialize(db_, "main", copy, static_cast<sqlite3_int64>(size),
                               static_cast<sqlite3_int64>(size),
                               SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) ==
           SQLITE_OK;
  }

  std::vector<std::string> texts(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return out;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
    }
    sqlite3_finalize(st);
    return out;
  }

  static std::string quoted(const std::string& name) {
    std::string q = "\"";
    for (const char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }

  // One change to one row of one table; false when the file has no row to
  // change (then plain byte mutation runs instead).
  bool mutate_once() {
    const std::vector<std::string> tables =
        texts("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
    if (tables.empty()) return false;
    const std::string table = quoted(tables[rng_() % tables.size()]);
    const std::vector<std::string> counted = texts("SELECT count(*) FROM " + table);
    const long rows = counted.empty() ? 0 : std::stol(counted[0]);
    if (rows == 0) return false;
    std::vector<Column> columns;
    sqlite3_stmt* info = nullptr;
    if (sqlite3_prepare_v2(db_, ("PRAGMA table_info(" + table + ")").c_str(), -1, &info, nullptr) !=
        SQLITE_OK)
      return false;
    while (sqlite3_step(info) == SQLITE_ROW) {
      columns.push_back({reinterpret_cast<const char*>(sqlite3_column_text(info, 1)),
                         sqlite3_column_int(info, 5) > 0});
    }
    sqlite3_finalize(info);
    if (columns.empty()) return false;
    // A row is named by its key columns (WITHOUT ROWID tables have no rowid),
    // else by rowid.
    std::string key;
    for (const Column& c : columns)
      if (c.key) key += (key.empty() ? "" : ", ") + quoted(c.name);
    if (key.empty()) key = "rowid";
    const auto pick = [&] { return std::to_string(rng_() % static_cast<unsigned long>(rows)); };
    const std::string row =
        "(" + key + ") = (SELECT " + key + " FROM " + table + " LIMIT 1 OFFSET " + pick() + ")";
    switch (rng_() % 8) {
      case 0:
        return exec("DELETE FROM " + table + " WHERE " + row);
      case 1: {  // another row's values over this one's (keys kept)
        std::string set;
        for (const Column& c : columns) {
          if (c.key) continue;
          set += (set.empty() ? "" : ", ") + quoted(c.name) + " = (SELECT " + quoted(c.name) +
                 " FROM " + table + " LIMIT 1 OFFSET " + pick() + ")";
        }
        return !set.empty() && exec("UPDATE " + table + " SET " + set + " WHERE " + row);
      }
      default:
        return set_value(table, quoted(columns[rng_() % columns.size()].name), row, pick());
    }
  }

  bool set_value(const std::string& table, const std::string& column, const std::string& row,
                 const std::string& other) {
    static const std::int64_t kBoundaries[] = {0,
                                               1,
                                               -1,
                                               2,
                                               255,
                                               256,
                                               65535,
                                               std::numeric_limits<std::int32_t>::max(),
                                               std::int64_t{1} << 32,
                                               std::numeric_limits<std::int64_t>::max(),
                                               std::numeric_limits<std::int64_t>::min()};
    const std::string update = "UPDATE " + table + " SET " + column + " = ?1 WHERE " + row;
    switch (rng_() % 4) {
      case 0:
        return exec("UPDATE " + table + " SET " + column + " = (SELECT " + column + " FROM " +
                    table + " LIMIT 1 OFFSET " + other + ") WHERE " + row);
      case 1:
        return exec("UPDATE " + table + " SET " + column + " = NULL WHERE " + row);
      case 2: {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db_, update.c_str(), -1, &st, nullptr) != SQLITE_OK) return false;
        sqlite3_bind_int64(st, 1, kBoundaries[rng_() % std::size(kBoundaries)]);
        const bool ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        return ok;
      }
      default:
        return mutate_bytes_of(table, column, row, update);
    }
  }

  // The value's bytes (blob or text) changed by libFuzzer's mutator.
  bool mutate_bytes_of(const std::string& table, const std::string& column, const std::string& row,
                       const std::string& update) {
    sqlite3_stmt* st = nullptr;
    const std::string select = "SELECT " + column + " FROM " + table + " WHERE " + row;
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &st, nullptr) != SQLITE_OK) return false;
    std::vector<std::uint8_t> bytes;
    bool text = false;
    if (sqlite3_step(st) == SQLITE_ROW) {
      text = sqlite3_column_type(st, 0) == SQLITE_TEXT;
      const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(st, 0));
      bytes.assign(p, p + sqlite3_column_bytes(st, 0));
    }
    sqlite3_finalize(st);
    const std::size_t size = bytes.size();
    bytes.resize(size + 64 + size / 4);
    bytes.resize(LLVMFuzzerMutate(bytes.data(), size, bytes.size()));
    if (sqlite3_prepare_v2(db_, update.c_str(), -1, &st, nullptr) != SQLITE_OK) return false;
    if (text) {
      sqlite3_bind_text(st, 1, reinterpret_cast<const char*>(bytes.data()),
                        static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_blob(st, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    }
    const bool ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok;
  }

  bool exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK &&
           sqlite3_changes(db_) > 0;
  }

  std::size_t write_back(std::uint8_t* data, std::size_t max_size, std::size_t size) {
    sqlite3_int64 n = 0;
    unsigned char* out = sqlite3_serialize(db_, "main", &n, 0);
    if (out == nullptr) return size;
    if (static_cast<std::size_t>(n) > max_size) {
      sqlite3_free(out);
      return LLVMFuzzerMutate(data, size, max_size);
    }
    std::memcpy(data, out, static_cast<std::size_t>(n));
    sqlite3_free(out);
    return static_cast<std::size_t>(n);
  }

  std::minstd_rand& rng_;
  sqlite3* db_ = nullptr;
};

}  // namespace bustle::fuzz

// The targets that read SQLite files define their custom mutator with this.
#define BUSTLE_SQLITE_CUSTOM_MUTATOR                                                    \
  extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,  \
                                                 std::size_t max_size, unsigned seed) { \
    return bustle::fuzz::SqliteMutator::mutate(data, size, max_size, seed);             \
  }

#else
#define BUSTLE_SQLITE_CUSTOM_MUTATOR
#endif
