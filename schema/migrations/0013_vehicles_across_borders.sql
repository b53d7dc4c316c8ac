-- Bustle SQLite schema, version 13: vehicles across district borders (issue
-- 34; vehicles/borders.cpp). A district world's garage counts its vehicles
-- on the road in other districts (garages.away), and between steps a
-- district holds the ghosts of the vehicles it just sent across, read by its
-- next vehicle phase (the ghost_* columns of vehicle_columns, one element
-- per ghost), with the crossings its pedestrians just walked onto. Applied after 0012 when a file is opened (same transaction).
-- Never edit a released migration. A file from before version 13 is of a
-- whole city or of a district without vehicles: nothing away, no ghost.
ALTER TABLE garages ADD COLUMN away INTEGER NOT NULL DEFAULT 0;  -- vehicles of this garage in other districts
ALTER TABLE vehicle_columns ADD COLUMN ghost_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vehicle_columns ADD COLUMN ghost_id_index BLOB NOT NULL DEFAULT x'';       -- u32 LE per ghost
ALTER TABLE vehicle_columns ADD COLUMN ghost_id_generation BLOB NOT NULL DEFAULT x'';  -- u32 LE per ghost
ALTER TABLE vehicle_columns ADD COLUMN ghost_garage BLOB NOT NULL DEFAULT x'';         -- u32 LE: its route's garage
ALTER TABLE vehicle_columns ADD COLUMN ghost_route_index BLOB NOT NULL DEFAULT x'';    -- u32 LE
ALTER TABLE vehicle_columns ADD COLUMN ghost_lane BLOB NOT NULL DEFAULT x'';           -- u32 LE lane index
ALTER TABLE vehicle_columns ADD COLUMN ghost_s_m BLOB NOT NULL DEFAULT x'';            -- f64 LE
-- Other districts' crossing lanes this district's pedestrians just walked
-- onto: its next vehicle phase yields to them.
ALTER TABLE vehicle_columns ADD COLUMN ghost_crossing_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vehicle_columns ADD COLUMN ghost_crossings BLOB NOT NULL DEFAULT x'';      -- u32 LE lane index
