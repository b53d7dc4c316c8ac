-- Bustle SQLite schema, version 3: the connected clients' observers
-- (SetClientObservers), which the tier resolver uses beside the scenario's and
-- operator's observers. Applied after 0002 when a file is opened (same
-- transaction). Never edit a released migration.
--
-- A version-2 checkpoint has no rows here and restores with an empty set (the
-- server re-submits the observers of the clients connected at that moment).
-- Spawn handles stopped carrying the representation stages in version 3: a
-- version-2 checkpoint with a live handle at representation_requested or
-- attached (or one in attached / ready_for_gameplay at all) is refused by the
-- core's validation, naming the handle.

-- One row per client observer, in the set's order. Real-valued columns have
-- no declared type on purpose (see observer_views in 0002).
CREATE TABLE client_observers (
  snapshot_id     INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  observer_index  INTEGER NOT NULL,
  x_m             NOT NULL,  -- f64
  y_m             NOT NULL,  -- f64
  z_m             NOT NULL,  -- f64 height
  has_heading     INTEGER NOT NULL CHECK (has_heading IN (0, 1)),
  heading_rad     NOT NULL,  -- f64 (read only with has_heading)
  PRIMARY KEY (snapshot_id, observer_index)
) WITHOUT ROWID;
