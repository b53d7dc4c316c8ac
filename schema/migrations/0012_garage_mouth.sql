-- Bustle SQLite schema, version 12: the garage mouth. A garage with
-- mouth_capacity > 0 dispatches a batch per step into its mouth; the
-- vehicles wait there, front first, for a clear entrance (GarageState::mouth,
-- vehicles.hpp). They have identities and VehicleIds and count against
-- capacity, but are on no lane: vehicle_columns does not hold them. Applied
-- after 0011 when a file is opened (same transaction). Never edit a released
-- migration. A file from before version 12 has no such table: no mouth held
-- a vehicle.
CREATE TABLE garage_mouth (
  snapshot_id    INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
  garage_index   INTEGER NOT NULL,
  position       INTEGER NOT NULL,  -- 0: the front, next onto the road
  id_index       INTEGER NOT NULL,  -- EntityId
  id_generation  INTEGER NOT NULL,
  ordinal        INTEGER NOT NULL,  -- VehicleId ordinal
  prototype      INTEGER NOT NULL,  -- index into the garage's prototypes
  request_id     TEXT NOT NULL,     -- the dispatched request (in garage_dispatched)
  PRIMARY KEY (snapshot_id, garage_index, position)
) WITHOUT ROWID;
