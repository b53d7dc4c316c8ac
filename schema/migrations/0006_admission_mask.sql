-- Bustle SQLite schema, version 6: the admission mask (SetAdmissionMask), the
-- walking pedestrians whose movement is held: one row per masked pedestrian,
-- in EntityId order, none when nobody is masked. Applied after 0005 when a file
-- is opened (same transaction). Never edit a released migration. A version-5
-- file has no such table: nobody masked.
CREATE TABLE admission_mask (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
