// Why a snapshot's scenario is not the running one, in words.
//
// A checkpoint keeps the scenario JSON it was taken under (with any --rate
// override applied), and a restore requires the running server's to be the
// same text. When it is not, repeating the two scenario ids says nothing —
// they are usually equal (a different --rate, an edited lane) — so this names
// the first field that differs and both of its values.
#pragma once

#include <string>

namespace bustle::persist {

// One phrase, e.g. "step length 100000 us in the snapshot vs 50000 us running
// (a different --rate, or step_us in the file)" or "lanes[2].speed_mps_limit is 1.4 in the snapshot
// vs 1.2 running". The id is compared first, then the step length (absent = the scenario default),
// then every other field in the snapshot's document order. Texts that parse to the same JSON are
// reported as differing only in formatting.
std::string describe_scenario_difference(const std::string& snapshot_json,
                                         const std::string& running_json);

}  // namespace bustle::persist
