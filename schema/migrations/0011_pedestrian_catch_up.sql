-- Bustle SQLite schema, version 11: equal progress across tier changes. A
-- pedestrian whose simulation tier changed (or that was placed) between two
-- of its due steps keeps a catch-up: steps its next due step adds to or takes
-- from its stride (PedestrianStore::catch_up_steps, sim_tier.hpp). Applied
-- after 0010 when a file is opened (same transaction). Never edit a released
-- migration. A file from before version 11 kept none: every row reads 0.
ALTER TABLE pedestrian_columns ADD COLUMN catch_up BLOB NOT NULL DEFAULT x'';  -- i8 steps, one per row
UPDATE pedestrian_columns SET catch_up = zeroblob(count);
