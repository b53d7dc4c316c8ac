// The snapshot store's tables, one file per subsystem (see docs/architecture.md
// and docs/snapshot-schema.md):
//   world_tables.cpp       world_state, pedestrian_columns, pending_commands
//   registry_columns.cpp   the entity registry's columns of world_state
//   population_tables.cpp  residents, zones, work points, lifecycle, handoffs
//   pipeline_tables.cpp    spawn pipeline, orphans, retiring FIFO, observers, routes
//   vehicle_tables.cpp     vehicle_columns, garages and their queues, signals
//   save_tables.cpp        save_state and the save's resident and observer lists
// snapshot_store.cpp opens and migrates the file and runs these inside one
// transaction per snapshot; every function here names its columns through a
// TableColumns list (columns.hpp) on both write and read.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "bustle/core/checkpoint.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "columns.hpp"

namespace bustle::persist::store {

// What the table readers and writers share: the connection, and the file's
// name and schema version for errors and version-gated reads.
class Tables {
 public:
  Tables(Database& db, const std::string& path, int file_version)
      : db_(db), path_(path), file_version_(file_version) {}

  Database& db() { return db_; }
  int file_version() const { return file_version_; }

  StoreError error(std::string table, std::string row, std::string field, std::string message,
                   int code = 0) const;
  StoreError sql_error(const SqlError& e, std::string table, std::string row = {}) const;
  // The first bad field a RowReader met, as an error of `cols`' table.
  StoreError row_error(const TableColumns& cols, const std::string& row, const RowReader& rr) const;

  // Prepares the INSERT of `cols`' table.
  StoreError prepare(const TableColumns& cols, Insert& out);
  // Runs one row; an error names the table and `row`.
  StoreError run(Insert& ins, const TableColumns& cols, const std::string& row);

  // Steps to the one row of a per-snapshot table (missing: an error naming
  // `missing`, e.g. "missing (checkpoint incomplete)").
  StoreError one_row(const TableColumns& cols, std::int64_t id, const std::string& row,
                     Statement& st, const char* missing = "missing (snapshot incomplete)");
  // one_row for a table of bulk blob columns: n receives its count column
  // (in [0, 2^24], else "out of range").
  StoreError blob_row(const TableColumns& cols, std::int64_t id, const std::string& row,
                      Statement& st, std::size_t& n);
  // Reads the rows of a per-snapshot table (optionally narrowed by `filter`,
  // an SQL condition) ordered by `key`, which must run 0, 1, 2, ... (else
  // `gap`); read_row reads one row and records bad fields in the reader. The
  // label passed is e.g. "snapshot_id=3 position=2".
  using RowCallback = std::function<void(RowReader&, const std::string& label)>;
  StoreError read_rows(const TableColumns& cols, const char* key, const std::string& filter,
                       std::int64_t id, const std::string& row, const RowCallback& read_row,
                       const char* gap = "not contiguous from 0");
  // Every row of a per-snapshot table in `order` (an ORDER BY list), no key check.
  StoreError each_row(const TableColumns& cols, const char* order, std::int64_t id,
                      const std::string& row,
                      const std::function<StoreError(RowReader&, const Statement&)>& read_row);

 private:
  Database& db_;
  const std::string& path_;
  int file_version_;
};

std::string snapshot_row(std::int64_t id);

// Each file's tables, for all_tables() (columns.hpp).
std::vector<const TableColumns*> world_tables();
std::vector<const TableColumns*> population_tables();
std::vector<const TableColumns*> pipeline_tables();
std::vector<const TableColumns*> vehicle_tables();
std::vector<const TableColumns*> save_tables();
std::vector<const TableColumns*> prevention_tables();

// world_tables.cpp
StoreError write_world_state(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp);
StoreError read_world_state(Tables& t, std::int64_t id, core::WorldCheckpoint& cp);
StoreError write_pedestrians(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp);
StoreError read_pedestrians(Tables& t, std::int64_t id, std::uint32_t expected,
                            core::WorldCheckpoint& cp);
StoreError write_pending_commands(Tables& t, std::int64_t id,
                                  const std::vector<core::CommandEnvelope>& inbox);
StoreError read_pending_commands(Tables& t, std::int64_t id,
                                 std::vector<core::CommandEnvelope>& inbox);

// registry_columns.cpp: the registry lives in world_state's row.
void bind_registry(Insert& ws, const core::RegistryState& r);
void read_registry(RowReader& ws, core::RegistryState& r);

// population_tables.cpp
StoreError write_population(Tables& t, std::int64_t id, const core::PopulationCheckpoint& p);
StoreError read_population(Tables& t, std::int64_t id, core::PopulationCheckpoint& p);
StoreError write_lifecycle(Tables& t, std::int64_t id, const core::LifecycleSettings& s);
StoreError read_lifecycle(Tables& t, std::int64_t id, const std::string& row,
                          core::LifecycleSettings& s);

// pipeline_tables.cpp
StoreError write_pipeline(Tables& t, std::int64_t id, const core::WorldCheckpoint& cp);
StoreError read_pipeline(Tables& t, std::int64_t id, core::WorldCheckpoint& cp);

// prevention_tables.cpp (migration 0007)
StoreError write_prevention(Tables& t, std::int64_t id, const core::PreventionState& p);
StoreError read_prevention(Tables& t, std::int64_t id, core::PreventionState& p);
StoreError write_routes(Tables& t, std::int64_t id, const core::RouteTableState& r);
StoreError read_routes(Tables& t, std::int64_t id, core::RouteTableState& r);
// Observer tables (client_observers, save_observers) share one row shape.
StoreError write_observer_rows(Tables& t, const TableColumns& cols, std::int64_t id,
                               const std::vector<core::ObserverPoint>& points);
StoreError read_observer_rows(Tables& t, const TableColumns& cols, std::int64_t id,
                              const std::string& row,
                              const std::function<void(const core::ObserverPoint&)>& add);
extern const TableColumns kSaveObservers;

// vehicle_tables.cpp
StoreError write_vehicles(Tables& t, std::int64_t id, const core::VehicleCheckpoint& v);
StoreError read_vehicles(Tables& t, std::int64_t id, core::VehicleCheckpoint& v);

// save_tables.cpp
StoreError write_save_tables(Tables& t, std::int64_t id, const core::SaveState& save);
// The save_state row (`named` labels errors, e.g. "name='nightly'").
StoreError read_save_state(Tables& t, std::int64_t id, const std::string& named,
                           core::SaveState& save);
// The lists a save of `schema_version` has (lifecycle and residents from 2, active set from 4).
StoreError read_save_lists(Tables& t, std::int64_t id, int schema_version, const std::string& named,
                           core::SaveState& save);

}  // namespace bustle::persist::store
