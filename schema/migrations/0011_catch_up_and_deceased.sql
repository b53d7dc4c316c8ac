-- Bustle SQLite schema, version 11. Applied after 0010 when a file is opened
-- (same transaction). Never edit a released migration.
--
-- Equal progress across tier changes: a pedestrian whose simulation tier
-- changed (or that was placed) between two of its due steps keeps a catch-up,
-- steps its next due step adds to or takes from its stride
-- (PedestrianStore::catch_up_steps, sim_tier.hpp). A file from before kept
-- none: every row reads 0.
ALTER TABLE pedestrian_columns ADD COLUMN catch_up BLOB NOT NULL DEFAULT x'';  -- i8 steps, one per row
UPDATE pedestrian_columns SET catch_up = zeroblob(count);
-- Deceased residents (KillPedestrian on a community member): a save names
-- the saveable ones, which a load recreates deceased. Nobody died before.
ALTER TABLE save_residents ADD COLUMN deceased INTEGER NOT NULL DEFAULT 0 CHECK (deceased IN (0, 1));
