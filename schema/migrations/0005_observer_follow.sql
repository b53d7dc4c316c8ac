-- Bustle SQLite schema, version 5: an operator observer that follows an
-- entity (SetObservers.follow). The observer's position is already in
-- world_state.observers; this table names the entity it follows: one row
-- while an entity is followed, none otherwise (the observers are fixed).
-- Applied after 0004 when a file is opened (same transaction). Never edit a
-- released migration. A version-4 file has no such table: nothing followed.
CREATE TABLE observer_follow (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id)
) WITHOUT ROWID;
