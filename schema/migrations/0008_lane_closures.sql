-- Bustle SQLite schema, version 8: lane closures (SetLaneClosed, i.e.
-- CloseLane / OpenLane). Applied after the earlier migrations when a file is
-- opened (same transaction). Never edit a released migration. A file of an
-- earlier version has no such tables: no lane closed, nobody waiting, all
-- counters 0.
-- The closed lanes by lane index, ascending; none when no lane is closed.
CREATE TABLE closed_lanes (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  lane_index     INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
-- The pedestrians waiting at the end of their lane because the way on is
-- closed, in EntityId order, with the step their wait began.
CREATE TABLE lane_waiters (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  since_step     INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
-- The closure counters; one row, only once a lane was ever closed.
CREATE TABLE lane_closure_counters (
  snapshot_id            INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  closures_total         INTEGER NOT NULL,
  openings_total         INTEGER NOT NULL,
  reroutes_total         INTEGER NOT NULL,
  dead_ends_total        INTEGER NOT NULL,
  spawns_deferred_total  INTEGER NOT NULL
);
