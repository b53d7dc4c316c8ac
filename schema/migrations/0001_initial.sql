-- Bustle SQLite schema, version 1. Applied in order on open; the version is
-- kept in PRAGMA user_version and in meta.schema_version. Never edit a
-- released migration: add the next numbered file instead.
--
-- One schema for both kinds of file (meta.file_kind):
--   'snapshots'  the snapshot store: named checkpoints and saves
--   'recording'  one recorded session: scenario, initial checkpoint,
--                every applied command, every step's digest, keyframes

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per checkpoint, save or keyframe. Human-readable summary columns
-- first; the state itself is in the tables below.
CREATE TABLE snapshots (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL UNIQUE,
  kind            TEXT NOT NULL CHECK (kind IN ('checkpoint', 'save', 'keyframe')),
  scenario_id     TEXT NOT NULL,
  scenario_json   TEXT NOT NULL,      -- the exact scenario the state belongs to
  step            INTEGER NOT NULL CHECK (step >= 0),
  step_us         INTEGER NOT NULL CHECK (step_us > 0),
  sim_time_us     INTEGER NOT NULL CHECK (sim_time_us >= 0),
  seed            INTEGER NOT NULL,   -- unsigned 64-bit stored as its signed bit pattern
  digest          INTEGER NOT NULL,   -- world digest of the stored state (same encoding)
  pedestrians     INTEGER NOT NULL CHECK (pedestrians >= 0),
  created_unix_ms INTEGER NOT NULL,
  server_version  TEXT NOT NULL
);

-- Checkpoint scalars: clocks, RNG, counters, registry (one row per snapshot).
CREATE TABLE world_state (
  snapshot_id            INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  rng_s0                 INTEGER NOT NULL,
  rng_s1                 INTEGER NOT NULL,
  rng_s2                 INTEGER NOT NULL,
  rng_s3                 INTEGER NOT NULL,
  route_salt             INTEGER NOT NULL,
  pedestrian_target      INTEGER NOT NULL CHECK (pedestrian_target >= 0),
  spawned_total          INTEGER NOT NULL,
  despawned_total        INTEGER NOT NULL,
  despawned_by_reason    TEXT NOT NULL,  -- JSON array of 6 counts, DespawnReason order
  spawn_failed_capacity  INTEGER NOT NULL,
  commands_accepted      INTEGER NOT NULL,
  commands_rejected      INTEGER NOT NULL,
  registry_capacity      INTEGER NOT NULL CHECK (registry_capacity > 0),
  registry_pop_seq       INTEGER NOT NULL,
  registry_generation    BLOB NOT NULL,  -- u32 LE per slot
  registry_alive         BLOB NOT NULL,  -- u8 per slot
  registry_free_fifo     BLOB NOT NULL   -- u32 LE slot indices, front to back
);

-- Bulk per-entity columns as little-endian blobs (one row per snapshot): a row
-- per entity could not meet the commit-time target at 100 000 agents.
CREATE TABLE pedestrian_columns (
  snapshot_id    INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  count          INTEGER NOT NULL CHECK (count >= 0),
  id_index       BLOB NOT NULL,  -- u32 LE
  id_generation  BLOB NOT NULL,  -- u32 LE
  lane           BLOB NOT NULL,  -- u32 LE lane index
  s_m            BLOB NOT NULL,  -- f64 LE distance along the lane
  hops           BLOB NOT NULL   -- u32 LE
);

-- Commands queued but not yet applied when the checkpoint was taken.
CREATE TABLE pending_commands (
  snapshot_id       INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,  -- arrival order
  client_id         INTEGER NOT NULL,
  request_id        INTEGER NOT NULL,
  kind              TEXT NOT NULL CHECK (kind IN ('set_pedestrian_target', 'despawn_entity')),
  count             INTEGER,           -- set_pedestrian_target
  entity_index      INTEGER,           -- despawn_entity
  entity_generation INTEGER,           -- despawn_entity
  PRIMARY KEY (snapshot_id, seq)
) WITHOUT ROWID;

-- Saves: persistent facts only (DESIGN §5).
CREATE TABLE save_state (
  snapshot_id        INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  pedestrian_target  INTEGER NOT NULL CHECK (pedestrian_target >= 0)
);

-- Recordings ---------------------------------------------------------------
-- A tick is one executed step of the recorded session, numbered from 1. Steps
-- can repeat after a restore; ticks never do.
CREATE TABLE recording_ticks (
  tick    INTEGER PRIMARY KEY,
  step    INTEGER NOT NULL,  -- world step after this tick
  digest  INTEGER NOT NULL   -- world digest after this tick
);

-- Every world command applied, by tick and arrival order.
CREATE TABLE recording_commands (
  tick              INTEGER NOT NULL,  -- applied at the start of this tick's step
  seq               INTEGER NOT NULL,
  client_id         INTEGER NOT NULL,
  request_id        INTEGER NOT NULL,
  kind              TEXT NOT NULL CHECK (kind IN ('set_pedestrian_target', 'despawn_entity')),
  count             INTEGER,
  entity_index      INTEGER,
  entity_generation INTEGER,
  PRIMARY KEY (tick, seq)
) WITHOUT ROWID;

-- Keyframes: the state before a tick. reason 'initial' (tick 1), 'periodic',
-- or 'restore' (the live world was replaced; replay must load it here).
CREATE TABLE recording_keyframes (
  tick         INTEGER PRIMARY KEY,
  snapshot_id  INTEGER NOT NULL UNIQUE REFERENCES snapshots(id) ON DELETE CASCADE,
  reason       TEXT NOT NULL CHECK (reason IN ('initial', 'periodic', 'restore'))
);
