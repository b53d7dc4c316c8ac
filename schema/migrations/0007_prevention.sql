-- Bustle SQLite schema, version 7: prevention (response units by level and
-- corpses, server/core/include/bustle/core/prevention.hpp). One prevention
-- row per checkpoint once prevention was used (none before: level 0, nothing
-- counted), its live units in handle order and its corpses in EntityId order.
-- Applied after 0006 when a file is opened (same transaction). Never edit a
-- released migration. A version-6 file has no such tables: prevention unused.
-- world_state.despawned_by_reason grows to 11 counts from this version (older
-- rows keep 7, read as the first 7).
CREATE TABLE prevention (
  snapshot_id             INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  level                   INTEGER NOT NULL,
  next_handle             INTEGER NOT NULL,
  deferred_last_step      INTEGER NOT NULL,
  level_queued            TEXT NOT NULL,   -- JSON array of 8 counts, index = level - 1
  level_spawned           TEXT NOT NULL,
  level_canceled          TEXT NOT NULL,
  level_despawned         TEXT NOT NULL,
  level_lost              TEXT NOT NULL,
  level_capped            TEXT NOT NULL,
  corpses_killed          INTEGER NOT NULL,
  corpses_soft_deleted    INTEGER NOT NULL,
  corpses_force_deleted   INTEGER NOT NULL,
  corpses_pressure_deleted INTEGER NOT NULL,
  cleanup_passes          INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE prevention_units (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  handle         INTEGER NOT NULL,
  level          INTEGER NOT NULL,
  state          INTEGER NOT NULL,   -- ResponseUnitState: 0 queued, 1 active, 2 retiring
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,   -- 0 (null id) while queued
  state_step     INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
CREATE TABLE corpses (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  death_step     INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
