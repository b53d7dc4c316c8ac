// Fuzz target: reading a snapshot file (server/persist SnapshotStore) into a
// candidate world, the path of Restore and Load (PersistWorker::submit_restore
// and submit_load): open the file as the server does (migrating an older
// schema), list it, read each snapshot (quick_check, every row and blob with
// its size checks), then World::restore / World::load_save, which validate
// every reference, range and the stored digest. Bad input must come back as
// an error naming the place, never a crash; a candidate that passes must step.
//
// The input is a whole SQLite file, written to a temporary file per execution;
// campaigns mutate it through SQL as well as byte by byte (sqlite_mutator.hpp).
// The server restores against the scenario it runs and refuses a snapshot of
// another; here each snapshot is restored against the scenario stored with it,
// so a mutated scenario text still reaches restore validation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "bustle/core/world.hpp"
#include "bustle/persist/snapshot_store.hpp"
#include "bustle/scenario/scenario_loader.hpp"
#include "fuzz_support.hpp"
#include "sqlite_mutator.hpp"

namespace {

using namespace bustle;

// At most this many snapshots of one file are read (each read is a full
// decode and validation).
constexpr std::size_t kSnapshotsMax = 4;

void check_error(const persist::StoreError& e) {
  if (e.ok() || e.to_string().empty()) std::abort();
}

void restore(persist::SnapshotStore& store, const persist::SnapshotInfo& info) {
  persist::LoadedCheckpoint lc;
  if (persist::StoreError e = store.read_checkpoint(info.name, lc); !e.ok()) return check_error(e);
  scenario::LoadResult sc =
      scenario::load_scenario_text(lc.scenario_json, "snapshots.scenario_json");
  if (!sc.ok() || sc.scenario->entity_capacity > fuzz::kWorldCapacityMax) return;
  core::World::RestoreResult restored = core::World::restore(*sc.scenario, lc.checkpoint);
  if (!restored.world) {
    if (restored.errors.empty() || restored.errors.front().message.empty()) std::abort();
    return;
  }
  if (!restored.errors.empty() || restored.world->step_index() != lc.checkpoint.step_index)
    std::abort();
  fuzz::step_candidate(*restored.world);
}

void load(persist::SnapshotStore& store, const persist::SnapshotInfo& info) {
  persist::LoadedSave ls;
  if (persist::StoreError e = store.read_save(info.name, ls); !e.ok()) return check_error(e);
  scenario::LoadResult sc =
      scenario::load_scenario_text(ls.scenario_json, "snapshots.scenario_json");
  if (!sc.ok() || sc.scenario->entity_capacity > fuzz::kWorldCapacityMax) return;
  persist::complete_schema1_save(ls, *sc.scenario);
  core::World::RestoreResult loaded = core::World::load_save(*sc.scenario, ls.save);
  if (!loaded.world) {
    if (loaded.errors.empty() || loaded.errors.front().message.empty()) std::abort();
    return;
  }
  fuzz::step_candidate(*loaded.world);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::InputFile file("bustle-fuzz-snapshot");
  const std::string& path = file.write(data, size);
  {
    persist::SnapshotStore store;
    if (persist::StoreError e =
            persist::SnapshotStore::open(path, persist::FileKind::Snapshots, false, store);
        !e.ok()) {
      check_error(e);
    } else {
      std::vector<persist::SnapshotInfo> infos;
      if (persist::StoreError e2 = store.list(infos, /*include_keyframes=*/true); !e2.ok()) {
        check_error(e2);
      } else {
        for (std::size_t i = 0; i < infos.size() && i < kSnapshotsMax; ++i) {
          if (infos[i].kind == "save") {
            load(store, infos[i]);
          } else {
            restore(store, infos[i]);
          }
        }
      }
    }
  }
  file.remove();
  return 0;
}

// Mutants that stay well-formed SQLite files (sqlite_mutator.hpp).
BUSTLE_SQLITE_CUSTOM_MUTATOR
