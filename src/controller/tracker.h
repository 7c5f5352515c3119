#pragma once

#include <map>
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
// controller, or a previous leader (Restore), saw it, never "now" again after a restart.
class FindingTracker {
 public:
  // Takes over the state a previous leader saved (Serialize). A document that cannot be read is
  // an error and leaves the state as it was.
  Status Restore(std::string_view saved);
  bool restored() const { return restored_; }
  // The state as JSON of at most `max_bytes`: when it does not fit, the findings seen last are
  // left out (they would only be reported again with a later onset) and `*dropped` says how many.
  std::string Serialize(size_t max_bytes, size_t* dropped) const;

  // Fills in `since` where the objects show none and returns what appeared and what cleared
  // since the last call.
  std::vector<Transition> Update(std::vector<Finding>& findings, TimePoint now);
  size_t size() const { return active_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;  // check, subject
  struct Entry {
    Severity severity = Severity::kInfo;
    TimePoint since;
    std::string message;
  };
  std::map<Key, Entry> active_;
  bool restored_ = false;
};

}  // namespace tocsin::controller
