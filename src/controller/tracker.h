#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/finding.h"
#include "base/status.h"
#include "base/time.h"

namespace tocsin::controller {

// A finding appearing (a Warning Event) or clearing (a Normal Event).
struct Transition {
  bool appeared = true;
  Finding finding;  // cleared: the finding as last seen
};

// The active findings between evaluations: their onsets and which transitions are new.
// A finding's `since` is the onset the objects show; when they show none, the first time this
// controller, or a previous leader (Restore), saw it, never "now" again after a restart. While a
// finding stays active its onset never moves later (the objects' can: a re-created pod).
class FindingTracker {
 public:
  // Takes over the state a previous leader saved (Serialize). A document that cannot be read is
  // an error and leaves the state as it was.
  Status Restore(std::string_view saved);
  bool restored() const { return restored_; }
  // Forgets every finding (the next Update reports all it is given as appeared).
  void Reset() { active_.clear(); }
  // The state as JSON of at most `max_bytes`: when it does not fit, the findings seen last are
  // left out (they would only be reported again with a later onset) and `*dropped` says how many.
  std::string Serialize(size_t max_bytes, size_t* dropped) const;

  // Fills in `since` where the objects show none and returns what appeared and what cleared
  // since the last call. A finding that is gone is cleared only once it has stayed gone for
  // `clear_after`: one that comes back before (a DaemonSet whose pods are ready for an instant
  // between crashes) keeps its onset and makes no transition.
  std::vector<Transition> Update(std::vector<Finding>& findings, TimePoint now,
                                 std::chrono::milliseconds clear_after = {});
  // When the next clearing falls due (an evaluation then posts it), if any.
  std::optional<TimePoint> NextClear(std::chrono::milliseconds clear_after) const;
  size_t size() const { return active_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;  // check, subject
  struct Entry {
    Severity severity = Severity::kInfo;
    TimePoint since;
    std::string message;
    std::optional<TimePoint> missing_since;  // gone from the evaluations since then
  };
  std::map<Key, Entry> active_;
  bool restored_ = false;
};

}  // namespace tocsin::controller
