#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "base/time.h"

namespace tocsin::canary {

// What the canary runner keeps beside the History in its ConfigMap (key "runner"): when the last
// round started, the faults of the canary itself (check -> onset, message), the latest message and
// evidence of each finding ("CHECK|NODE" or "CHECK|A|B"), and when each fabric node was first
// seen (a node that never passed is stale that long after).
struct RunnerState {
  std::optional<TimePoint> last_round_start;
  std::map<std::string, std::pair<TimePoint, std::string>> faults;
  std::map<std::string, nlohmann::json> details;  // {"message", "at", "evidence"}
  std::map<std::string, TimePoint> first_seen;
};

inline constexpr size_t kMaxRunnerStateBytes = 256 << 10;
inline constexpr size_t kMaxDetails = 128;
inline constexpr size_t kMaxFaults = 16;
inline constexpr size_t kMaxDetailBytes = 2048;  // a detail's evidence, as JSON
inline constexpr int kMaxRunnerStateDepth = 8;

// Drops the oldest details beyond kMaxDetails first.
std::string EncodeRunnerState(RunnerState state);
// Hostile input (whoever may edit the ConfigMap wrote it): at most kMaxRunnerStateBytes, nesting
// at most kMaxRunnerStateDepth (deeper values are dropped while parsing: nothing deep is ever
// built), entries of the wrong type or size skipped, counts capped. An error only when it is not
// a JSON object at all.
Result<RunnerState> DecodeRunnerState(std::string_view text);

}  // namespace tocsin::canary
