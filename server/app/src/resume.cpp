// --resume FILE (resume.hpp).
#include "resume.hpp"

#include "bustle/persist/recorder.hpp"
#include "bustle/scenario/scenario_loader.hpp"

namespace bustle::app {
namespace {

// The recording is of this city: the same scenario id and district.
std::string same_city(const std::string& path, const persist::RecordingReader& reader,
                      const core::Scenario& scenario) {
  scenario::LoadResult recorded = scenario::load_scenario_text(reader.scenario_json(), path);
  if (!recorded.ok()) return "--resume " + path + ": its scenario does not load";
  const auto district = [](const core::Scenario& s) {
    return s.own_district < 0 ? std::string("the whole city")
                              : "district '" + s.districts[s.own_district].id + "'";
  };
  if (recorded.scenario->id != scenario.id ||
      recorded.scenario->own_district != scenario.own_district)
    return "--resume " + path + ": it records '" + recorded.scenario->id + "' (" +
           district(*recorded.scenario) + "), this server runs '" + scenario.id + "' (" +
           district(scenario) + ")";
  return {};
}

}  // namespace

Resumed resume_from_recording(const std::string& path, const core::Scenario& scenario,
                              core::LogSink* log) {
  Resumed out;
  persist::RecordingReader reader;
  if (persist::StoreError e = persist::RecordingReader::open(path, reader); !e.ok()) {
    out.error = "--resume: " + e.to_string();
    return out;
  }
  if (out.error = same_city(path, reader, scenario); !out.error.empty()) return out;
  // The last keyframe at least one tick before the last recorded one: a
  // district's neighbours may still need the step end of the step before
  // the last it recorded (a killed process's last frames can be lost with its
  // connection), so that step is replayed too (district_links.hpp).
  const auto& kfs = reader.keyframes();
  const persist::RecordingKeyframe* chosen = &kfs.front();
  for (const persist::RecordingKeyframe& k : kfs) {
    if (k.tick < reader.last_tick()) chosen = &k;
  }
  const persist::RecordingKeyframe& kf = *chosen;
  persist::LoadedCheckpoint loaded;
  if (persist::StoreError e = reader.read_keyframe(kf, loaded); !e.ok()) {
    out.error = "--resume: " + e.to_string();
    return out;
  }
  core::World::RestoreResult restored = core::World::restore(scenario, loaded.checkpoint, log);
  if (!restored.world) {
    out.error = "--resume " + path + ": the keyframe at tick " + std::to_string(kf.tick) +
                " does not restore: " + restored.errors.front().path + ": " +
                restored.errors.front().message;
    return out;
  }
  out.keyframe_step = restored.world->step_index();
  std::vector<persist::RecordedTick> ticks;
  if (persist::StoreError e = reader.read_ticks(kf.tick, reader.last_tick(), ticks); !e.ok()) {
    out.error = "--resume: " + e.to_string();
    return out;
  }
  core::World& w = *restored.world;
  for (const persist::RecordedTick& t : ticks) {
    // The keyframe holds its own tick's commands already queued.
    if (t.tick != kf.tick) {
      for (const core::CommandEnvelope& env : t.commands) w.submit(env);
    }
    w.step();
    if (w.step_index() != t.step || w.digest() != t.digest) {
      out.error = "--resume " + path + ": tick " + std::to_string(t.tick) + " replays to step " +
                  std::to_string(w.step_index()) + " digest " + std::to_string(w.digest()) +
                  ", the recording says step " + std::to_string(t.step) + " digest " +
                  std::to_string(t.digest);
      return out;
    }
    out.step_ends.push_back({w.step_index(), w.digest(), w.border_outbox()});
  }
  out.world = std::move(restored.world);
  return out;
}

}  // namespace bustle::app
