// docs/snapshot-schema.md, the schema the migrations produce in a real SQLite
// file, and the column lists the snapshot store's code names (store/*.cpp)
// must agree: a migration without a regenerated doc (make schema-doc), or a
// column list that misses or misspells a column, fails here.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "bustle/persist/snapshot_store.hpp"
#include "store/columns.hpp"

using namespace bustle;
namespace fs = std::filesystem;

namespace {

struct Column {
  std::string name;
  std::string type;
  bool operator==(const Column&) const = default;
};
using Schema = std::map<std::string, std::vector<Column>>;

std::string describe(const std::vector<Column>& cols) {
  std::string s;
  for (const Column& c : cols)
    s += "| " + c.name + " | " + (c.type.empty() ? "(none)" : c.type) + " |\n";
  return s;
}

// The tables and columns of the file SnapshotStore::open creates and migrates.
Schema migrated_schema(const std::string& path) {
  persist::SnapshotStore store;
  const persist::StoreError e =
      persist::SnapshotStore::open(path, persist::FileKind::Snapshots, true, store);
  INFO(e.to_string());
  REQUIRE(e.ok());
  Schema schema;
  sqlite3* db = store.db().handle();
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(
              db,
              "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p "
              "WHERE m.type = 'table' ORDER BY m.name, p.cid",
              -1, &st, nullptr) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const auto text = [&](int i) {
      return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i)));
    };
    schema[text(0)].push_back({text(1), text(2)});
  }
  sqlite3_finalize(st);
  return schema;
}

// "## table" headings, each followed by "| column | type | notes |" rows.
Schema documented_schema(const std::string& path) {
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in);
  Schema schema;
  std::string line, table;
  while (std::getline(in, line)) {
    if (line.starts_with("## ")) {
      table = line.substr(3);
      schema[table];
      continue;
    }
    if (table.empty() || !line.starts_with("| ") || line.starts_with("| column |")) continue;
    std::stringstream cells(line.substr(2));
    std::string name, type;
    std::getline(cells, name, '|');
    std::getline(cells, type, '|');
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(' '));
      s.erase(s.find_last_not_of(' ') + 1);
      return s;
    };
    type = trim(type);
    schema[table].push_back({trim(name), type == "(none)" ? "" : type});
  }
  return schema;
}

}  // namespace

TEST_CASE("the schema doc matches the migrated schema, and the store's column lists match both") {
  const fs::path path =
      fs::temp_directory_path() / ("bustle-schema-doc-" + std::to_string(::getpid()) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  const Schema real = migrated_schema(path.string());
  const Schema doc = documented_schema(std::string(BUSTLE_SOURCE_DIR) + "/docs/snapshot-schema.md");
  REQUIRE(real.size() >= 30);

  SECTION("every table of the migrated file is documented with its columns and types, in order") {
    for (const auto& [table, cols] : real) {
      INFO("table " << table << " (regenerate with make schema-doc); the file has:\n"
                    << describe(cols));
      REQUIRE(doc.contains(table));
      CHECK(doc.at(table) == cols);
    }
    for (const auto& [table, cols] : doc) {
      INFO("documented table " << table);
      CHECK(real.contains(table));
    }
  }

  SECTION("every column list the store names is its table's columns, in schema order") {
    const auto tables = persist::store::all_tables();
    CHECK(tables.size() == real.size() - 4);  // all but meta and the recorder's three tables
    for (const persist::store::TableColumns* t : tables) {
      INFO("table " << t->table());
      REQUIRE(real.contains(t->table()));
      std::vector<std::string> expected, named;
      for (const Column& c : real.at(t->table())) expected.push_back(c.name);
      for (const char* n : t->names()) named.emplace_back(n);
      CHECK(named == expected);
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
}
