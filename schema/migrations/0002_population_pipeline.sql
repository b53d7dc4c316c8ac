-- Bustle SQLite schema, version 2: the population pipeline (DESIGN §3) —
-- spawn handles, routes of spawned walkers, the orphan set and retiring FIFO
-- of the despawn phase, observer heights and view directions, two-phase zone
-- handoffs, runtime lifecycle settings, and saveable residents in saves.
-- Applied after 0001 when a file is opened (same transaction). Never edit a
-- released migration.
--
-- Snapshots already in a version-1 file stay listed and deletable; each row
-- records the schema it was written with. A version-1 checkpoint lacks the
-- state below, so it cannot be restored exactly and is refused with a message;
-- a version-1 save loads with the scenario's lifecycle settings (it predates
-- SetLifecycle) and no saveable residents (saves did not hold them).

ALTER TABLE snapshots ADD COLUMN schema_version INTEGER NOT NULL DEFAULT 1
  CHECK (schema_version >= 1);  -- schema the snapshot was written with

-- Checkpoint additions to existing tables. The defaults only fill rows written
-- by version 1 (nothing faded, the interval grid started at 0, no handoffs).
ALTER TABLE pedestrian_columns ADD COLUMN priority BLOB NOT NULL DEFAULT x'';  -- u8 PriorityClass
ALTER TABLE pedestrian_columns ADD COLUMN origin BLOB NOT NULL DEFAULT x'';    -- u8 PedestrianOrigin
ALTER TABLE pedestrian_columns ADD COLUMN route BLOB NOT NULL DEFAULT x'';     -- u32 LE route slot (route_slots), 0xFFFFFFFF for none
ALTER TABLE vehicle_columns ADD COLUMN last_advance_step BLOB NOT NULL DEFAULT x'';  -- u64 LE per vehicle: step it last moved (despawn.stuck_ms)
ALTER TABLE world_state ADD COLUMN faded_total INTEGER NOT NULL DEFAULT 0;         -- despawns that faded
ALTER TABLE world_state ADD COLUMN fade_skipped_total INTEGER NOT NULL DEFAULT 0;  -- off-screen: deleted at once
ALTER TABLE world_state ADD COLUMN interval_origin_us INTEGER NOT NULL DEFAULT 0;  -- sim time the lifecycle interval grid starts at
ALTER TABLE zones ADD COLUMN handoffs_started INTEGER NOT NULL DEFAULT 0;   -- active members offered here, last interval
ALTER TABLE zones ADD COLUMN handoffs_accepted INTEGER NOT NULL DEFAULT 0;  -- arrived, last interval
ALTER TABLE zones ADD COLUMN handoffs_returned INTEGER NOT NULL DEFAULT 0;  -- returned to their source, last interval
ALTER TABLE zones ADD COLUMN retiring INTEGER NOT NULL DEFAULT 0;           -- members fading out (counted in active)

-- Runtime lifecycle settings (SetLifecycle), one row per checkpoint or save.
CREATE TABLE lifecycle_settings (
  snapshot_id       INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  growth_quota      INTEGER NOT NULL,  -- per zone per interval
  recycle_quota     INTEGER NOT NULL,
  interval_ms       INTEGER NOT NULL,
  migration_budget  INTEGER NOT NULL   -- per interval, all zones
);

-- Active members on their way from one zone to another, sorted by resident.
CREATE TABLE zone_handoffs (
  snapshot_id  INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position     INTEGER NOT NULL,
  resident     INTEGER NOT NULL,  -- resident index
  from_zone    INTEGER NOT NULL,  -- zone index
  to_zone      INTEGER NOT NULL,  -- zone index
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- Height and view direction of each observer, parallel to world_state.observers
-- (no rows: every observer at height 0 without a view direction).
-- Real-valued columns have no declared type on purpose: REAL affinity would
-- store -0.0 as 0, and checkpoints must round-trip every bit.
CREATE TABLE observer_views (
  snapshot_id     INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  observer_index  INTEGER NOT NULL,
  z_m             NOT NULL,  -- f64 height
  has_heading     INTEGER NOT NULL CHECK (has_heading IN (0, 1)),
  heading_rad     NOT NULL,  -- f64, 0 = +x, counter-clockwise (read only with has_heading)
  PRIMARY KEY (snapshot_id, observer_index)
) WITHOUT ROWID;

-- Spawn pipeline scalars (spawn_pipeline.hpp), one row per checkpoint.
CREATE TABLE spawn_pipeline (
  snapshot_id           INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE,
  next_handle           INTEGER NOT NULL,  -- handles are 1, 2, ... and never reused
  requested             INTEGER NOT NULL,
  per_state_total       TEXT NOT NULL,     -- JSON array of 9 counts (entries into each state), SpawnState order
  deferred_by_cap       INTEGER NOT NULL,  -- last step
  deferred_by_capacity  INTEGER NOT NULL,  -- last step
  deferred_by_zone      INTEGER NOT NULL   -- last step
);

-- Spawn handles: 'live' (not terminal, sorted by handle) and 'recent' (the
-- last terminal ones, oldest first).
CREATE TABLE spawn_handles (
  snapshot_id        INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  list               TEXT NOT NULL CHECK (list IN ('live', 'recent')),
  position           INTEGER NOT NULL,
  handle             INTEGER NOT NULL,
  state              INTEGER NOT NULL,  -- SpawnState: 0 queued, 1 identity_created, 2 registered,
                                        -- 3 representation_requested, 4 attached, 5 ready_for_gameplay,
                                        -- 6 failed, 7 canceled, 8 timed_out
  failure            INTEGER NOT NULL,  -- SpawnFailure: 0 none, 1 entity_gone, 2 world_replaced
  entity_index       INTEGER NOT NULL,
  entity_generation  INTEGER NOT NULL,  -- 0 while no identity exists
  client_id          INTEGER NOT NULL,  -- who asked (updates go to that client)
  request_id         INTEGER NOT NULL,
  zone               INTEGER NOT NULL,  -- zone index, -1 any sidewalk
  lane               INTEGER NOT NULL,  -- lane index, 4294967295 any lane of the zone
  priority           INTEGER NOT NULL,  -- PriorityClass: 0 story, 1 quest, 2 community, 3 background
  requested_step     INTEGER NOT NULL,
  deadline_step      INTEGER NOT NULL,
  state_step         INTEGER NOT NULL,  -- step of the last state change
  route              INTEGER NOT NULL,  -- route slot (route_slots) held until the walker takes it, 4294967295 for none
  PRIMARY KEY (snapshot_id, list, position)
) WITHOUT ROWID;

-- Routes of spawned walkers (route_table.hpp), all in one shared buffer: a
-- route is the slice [offset, offset + count) of route_lanes plus the index of
-- the next lane to take. Walkers (pedestrian_columns.route) and live spawn
-- handles (spawn_handles.route) hold slots. No rows: the table has no slot yet.
CREATE TABLE route_slots (
  snapshot_id  INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  slot         INTEGER NOT NULL,
  offset       INTEGER NOT NULL,  -- route_lanes.position of the route's first lane
  count        INTEGER NOT NULL,  -- lanes in the route; 0 for a free slot
  target       INTEGER NOT NULL,  -- next lane to take, 0..count (count: used up)
  PRIMARY KEY (snapshot_id, slot)
) WITHOUT ROWID;

-- The shared buffer, in order; it also holds released slices that were not
-- compacted away yet.
CREATE TABLE route_lanes (
  snapshot_id  INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position     INTEGER NOT NULL,
  lane         INTEGER NOT NULL,  -- lane index
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- Free route slots, a LIFO: the last position is reused first.
CREATE TABLE route_free_slots (
  snapshot_id  INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position     INTEGER NOT NULL,
  slot         INTEGER NOT NULL,  -- route_slots.slot (count 0)
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- The despawn phase's orphan set (retiring entities, sorted by id).
CREATE TABLE orphans (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  reason         INTEGER NOT NULL,  -- DespawnReason
  lane           INTEGER NOT NULL,  -- lane index where it stopped
  s_m            NOT NULL,          -- f64 distance along the lane (no declared type: see observer_views)
  resident       INTEGER NOT NULL,  -- resident index, 4294967295 for none
  release_step   INTEGER NOT NULL,  -- final deletion at or after this step
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- The retiring FIFO, front first.
CREATE TABLE retiring_fifo (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- Saves: saveable residents (communities with saveable: true) in resident
-- order, with the zone each belongs to; their identities are recreated with
-- the same EntityIds on load. (Saves also get a lifecycle_settings row.)
CREATE TABLE save_residents (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  zone_id        TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;
