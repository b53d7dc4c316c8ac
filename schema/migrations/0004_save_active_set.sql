-- Bustle SQLite schema, version 4: what a load's reconciliation needs (seed
-- 001). A save now keeps every resident that was walking when it was taken
-- (zone and lane position) and the operator/scenario observers, so the load
-- places the saved active set again in one reconciling step and the tiers
-- measure from the saved observers. Applied after 0003 when a file is opened
-- (same transaction). Never edit a released migration.
--
-- A version-3 save has no rows here: it loads as before (the active set
-- regrows within the lifecycle quotas, the scenario's observers apply).

-- One row per resident walking at save time, in resident order.
CREATE TABLE save_active_residents (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  position       INTEGER NOT NULL,
  id_index       INTEGER NOT NULL,
  id_generation  INTEGER NOT NULL,
  zone_id        TEXT NOT NULL,
  lane_id        TEXT NOT NULL,
  s_m            NOT NULL,  -- f64 distance along the lane (no declared type: see observer_views in 0002)
  PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- One row per operator/scenario observer (SetObservers) at save time.
CREATE TABLE save_observers (
  snapshot_id     INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  observer_index  INTEGER NOT NULL,
  x_m             NOT NULL,  -- f64
  y_m             NOT NULL,  -- f64
  z_m             NOT NULL,  -- f64 height
  has_heading     INTEGER NOT NULL CHECK (has_heading IN (0, 1)),
  heading_rad     NOT NULL,  -- f64 (read only with has_heading)
  PRIMARY KEY (snapshot_id, observer_index)
) WITHOUT ROWID;
