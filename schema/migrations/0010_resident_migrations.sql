-- Bustle SQLite schema, version 10: per-resident migrations (seed 001's HUD:
-- migration count and last portal). One row per snapshot, bulk columns like
-- resident_columns but sparse: an entry only for residents that ever changed
-- zone, sorted by resident index. Applied after 0009 when a file is opened
-- (same transaction). Never edit a released migration. A version-9 file has
-- no such table: nobody migrated yet.
CREATE TABLE resident_migrations (
  snapshot_id  INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  count        INTEGER NOT NULL CHECK (count >= 0),
  resident     BLOB NOT NULL,  -- u32 resident index, ascending
  migrations   BLOB NOT NULL,  -- u32 zone changes so far (>= 1)
  last_portal  BLOB NOT NULL   -- u32 zone index it left at its last migration
);
