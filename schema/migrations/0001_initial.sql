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
  despawned_by_reason    TEXT NOT NULL,  -- JSON array of counts, DespawnReason order
  spawn_failed_capacity  INTEGER NOT NULL,
  commands_accepted      INTEGER NOT NULL,
  commands_rejected      INTEGER NOT NULL,
  registry_capacity      INTEGER NOT NULL CHECK (registry_capacity > 0),
  registry_pop_seq       INTEGER NOT NULL,
  registry_generation    BLOB NOT NULL,  -- u32 LE per slot
  registry_alive         BLOB NOT NULL,  -- u8 per slot
  registry_free_fifo     BLOB NOT NULL,  -- u32 LE slot indices, front to back
  plan_cursor            INTEGER NOT NULL,  -- vehicle content plan progress
  plan_accepted          INTEGER NOT NULL,
  plan_rejected          INTEGER NOT NULL,
  observers              TEXT NOT NULL,     -- JSON array of [x, y]
  day_us                 INTEGER NOT NULL,  -- time of day in microseconds
  time_scale             INTEGER NOT NULL,
  last_interval          INTEGER NOT NULL,  -- lifecycle interval last run
  forced_full            TEXT NOT NULL,     -- JSON [[index, generation], ...] held in Full (ForceFull)
  force_full_refused     INTEGER NOT NULL,
  vehicle_step_stats     TEXT NOT NULL      -- JSON: last step's tier and policy counts
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
  hops           BLOB NOT NULL,  -- u32 LE
  resident       BLOB NOT NULL,  -- u32 LE resident index, 0xFFFFFFFF for background
  tier           BLOB NOT NULL,  -- u8 SimTier
  tier_stats     TEXT NOT NULL   -- JSON [full, simulated, coarse, promoted, demoted, deferred, forced, forced_overflow]
);

-- Resident identities (community members), active or dormant: bulk columns
-- as blobs, one row per snapshot (a million dormant records must commit fast).
CREATE TABLE resident_columns (
  snapshot_id    INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  count          INTEGER NOT NULL CHECK (count >= 0),
  id_index       BLOB NOT NULL,  -- u32
  id_generation  BLOB NOT NULL,  -- u32
  community      BLOB NOT NULL,  -- u32 community index
  profession     BLOB NOT NULL,  -- u32 index into the community's professions
  zone           BLOB NOT NULL,  -- u32 zone index
  active         BLOB NOT NULL,  -- u8
  work_point     BLOB NOT NULL,  -- i32 (-1 none)
  work_slot      BLOB NOT NULL   -- i32 (-1 none or waiting)
);

-- Zones, one readable row each: the lifecycle coordinator's counts.
CREATE TABLE zones (
  snapshot_id           INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  zone_index            INTEGER NOT NULL,
  zone_id               TEXT NOT NULL,
  target                INTEGER NOT NULL,
  active                INTEGER NOT NULL,
  dormant               INTEGER NOT NULL,
  pending_spawn         INTEGER NOT NULL,
  pending_recycle       INTEGER NOT NULL,
  activated             INTEGER NOT NULL,
  recycled              INTEGER NOT NULL,
  deferred_by_quota     INTEGER NOT NULL,
  rejected_by_capacity  INTEGER NOT NULL,
  migrated_in           INTEGER NOT NULL,
  deferred_by_migration INTEGER NOT NULL,
  activated_total       INTEGER NOT NULL,
  recycled_total        INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, zone_index)
) WITHOUT ROWID;

-- Work-point slots and waiting queues (JSON arrays of resident indices).
CREATE TABLE work_points (
  snapshot_id       INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  work_point_index  INTEGER NOT NULL,
  occupants         TEXT NOT NULL,  -- per slot: resident index or -1
  waiting           TEXT NOT NULL,  -- FIFO of resident indices
  PRIMARY KEY (snapshot_id, work_point_index)
) WITHOUT ROWID;

-- Commands queued but not yet applied when the checkpoint was taken. `args`
-- is a JSON object with the command's fields (see persist/command_codec.hpp).
CREATE TABLE pending_commands (
  snapshot_id  INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,  -- arrival order
  client_id    INTEGER NOT NULL,
  request_id   INTEGER NOT NULL,
  kind         TEXT NOT NULL,     -- set_pedestrian_target, despawn_entity, garage_request, ...
  args         TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, seq)
) WITHOUT ROWID;

-- Vehicles: bulk per-vehicle columns as little-endian blobs, one row per
-- snapshot (DESIGN §4 state; VehicleId = vehicle.<garage id>.<ordinal:06>).
CREATE TABLE vehicle_columns (
  snapshot_id        INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  count              INTEGER NOT NULL CHECK (count >= 0),
  id_index           BLOB NOT NULL,  -- u32
  id_generation      BLOB NOT NULL,  -- u32
  garage             BLOB NOT NULL,  -- u32 garage index
  ordinal            BLOB NOT NULL,  -- u64 VehicleId ordinal
  prototype          BLOB NOT NULL,  -- u32 index into the garage's prototypes
  route_index        BLOB NOT NULL,  -- u32
  lane               BLOB NOT NULL,  -- u32 lane index
  s_m                BLOB NOT NULL,  -- f64 distance along the lane
  speed_mps          BLOB NOT NULL,  -- f64
  strategy           BLOB NOT NULL,  -- u8 VehicleStrategy
  policy             BLOB NOT NULL,  -- u8 ControlPolicy
  reason             BLOB NOT NULL,  -- u8 PolicyReason
  tier               BLOB NOT NULL,  -- u8 SimTier
  leader_index       BLOB NOT NULL,  -- u32
  leader_generation  BLOB NOT NULL,  -- u32 (0 = no leader)
  steps_advanced     BLOB NOT NULL,  -- u64
  waiting_since      BLOB NOT NULL,  -- u64
  despawn_requested  BLOB NOT NULL,  -- u8
  request_ids        TEXT NOT NULL   -- JSON array of strings
);

-- Garages, one row each: counters and clocks a person can read.
CREATE TABLE garages (
  snapshot_id           INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  garage_index          INTEGER NOT NULL,
  garage_id             TEXT NOT NULL,
  frame_index           INTEGER NOT NULL,
  has_dispatched        INTEGER NOT NULL CHECK (has_dispatched IN (0, 1)),
  last_dispatch_frame   INTEGER NOT NULL,
  next_enqueue_ordinal  INTEGER NOT NULL,
  next_vehicle_ordinal  INTEGER NOT NULL,
  turnarounds           INTEGER NOT NULL,
  last_gate             INTEGER NOT NULL,  -- DispatchGate
  gate_steps            TEXT NOT NULL,     -- JSON array, DispatchGate order
  rejected_invalid      INTEGER NOT NULL,
  rejected_duplicate    INTEGER NOT NULL,
  rejected_queue_full   INTEGER NOT NULL,
  canceled              INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, garage_index)
) WITHOUT ROWID;

-- Each garage's request queue, in dispatch order.
CREATE TABLE garage_queue (
  snapshot_id      INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  garage_index     INTEGER NOT NULL,
  position         INTEGER NOT NULL,
  request_id       TEXT NOT NULL,
  prototype        INTEGER NOT NULL,
  priority         INTEGER NOT NULL,
  enqueue_ordinal  INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, garage_index, position)
) WITHOUT ROWID;

-- Request ids that received a vehicle.
CREATE TABLE garage_dispatched (
  snapshot_id   INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  garage_index  INTEGER NOT NULL,
  request_id    TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, garage_index, request_id)
) WITHOUT ROWID;

CREATE TABLE signals (
  snapshot_id       INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  signal_index      INTEGER NOT NULL,
  signal_id         TEXT NOT NULL,
  phase             INTEGER NOT NULL,  -- 0 open, 1 yield, 2 closed
  phase_elapsed_us  INTEGER NOT NULL,
  cycles            INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, signal_index)
) WITHOUT ROWID;

-- Saves: persistent facts only (DESIGN §5).
CREATE TABLE save_state (
  snapshot_id        INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  pedestrian_target  INTEGER NOT NULL CHECK (pedestrian_target >= 0),
  day_us             INTEGER NOT NULL,  -- time of day in microseconds
  time_scale         INTEGER NOT NULL,
  garage_ordinals    TEXT NOT NULL      -- JSON: next VehicleId ordinal per garage
);

-- Recordings ---------------------------------------------------------------
-- A tick is one executed step of the recorded session, numbered from 1. Steps
-- can repeat after a restore; ticks never do.
CREATE TABLE recording_ticks (
  tick    INTEGER PRIMARY KEY,
  step    INTEGER NOT NULL,  -- world step after this tick
  digest  INTEGER NOT NULL   -- world digest after this tick
);

-- Every world command applied, by tick and arrival order (args as in
-- pending_commands).
CREATE TABLE recording_commands (
  tick         INTEGER NOT NULL,  -- applied at the start of this tick's step
  seq          INTEGER NOT NULL,
  client_id    INTEGER NOT NULL,
  request_id   INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  args         TEXT NOT NULL,
  PRIMARY KEY (tick, seq)
) WITHOUT ROWID;

-- Keyframes: the state before a tick. reason 'initial' (tick 1), 'periodic',
-- or 'restore' (the live world was replaced; replay must load it here).
CREATE TABLE recording_keyframes (
  tick         INTEGER PRIMARY KEY,
  snapshot_id  INTEGER NOT NULL UNIQUE REFERENCES snapshots(id) ON DELETE CASCADE,
  reason       TEXT NOT NULL CHECK (reason IN ('initial', 'periodic', 'restore'))
);
