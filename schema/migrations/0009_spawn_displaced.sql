-- Bustle SQLite schema, version 9: spawn pressure. A queued spawn request can
-- be displaced by a more important one at spawn.queue_depth (Canceled with
-- failure 3, Displaced, in spawn_handles.failure); spawn_pipeline counts those
-- displacements. Applied after the earlier migrations when a file is opened
-- (same transaction). Never edit a released migration. A file from before
-- version 9 displaced nothing: the column reads 0.
ALTER TABLE spawn_pipeline ADD COLUMN displaced_total INTEGER NOT NULL DEFAULT 0;  -- Canceled(Displaced) handles since start
