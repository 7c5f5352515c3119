#include "controller/tracker.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tocsin::controller {

Status FindingTracker::Restore(std::string_view saved) {
  auto doc = nlohmann::json::parse(saved, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<int64_t>() != 1 || !doc.contains("findings") ||
      !doc["findings"].is_array()) {
    return Status::ParseError("saved findings: not a version 1 document");
  }
  std::map<Key, Entry> restored;
  for (const auto& f : doc["findings"]) {
    if (!f.is_object() || !f.contains("check") || !f["check"].is_string() ||
        !f.contains("subject") || !f["subject"].is_string() || !f.contains("since") ||
        !f["since"].is_string()) {
      return Status::ParseError("saved findings: an entry without check, subject and since");
    }
    auto since = ParseRfc3339(f["since"].get<std::string>());
    if (!since) return Status::ParseError("saved findings: since is not an RFC 3339 time");
    Entry e;
    e.since = *since;
    if (f.contains("severity") && f["severity"].is_string()) {
      e.severity = ParseSeverity(f["severity"].get<std::string>()).value_or(Severity::kWarning);
    }
    // No message is taken from the Lease: whoever can write it must not word Events.
    restored[{f["check"].get<std::string>(), f["subject"].get<std::string>()}] = std::move(e);
  }
  active_ = std::move(restored);
  restored_ = true;
  return Status::Ok();
}

std::string FindingTracker::Serialize(size_t max_bytes, size_t* dropped) const {
  // Oldest onsets first: those are the ones a restart must not lose.
  std::vector<std::pair<const Key*, const Entry*>> order;
  for (const auto& [k, e] : active_) order.push_back({&k, &e});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->since < b.second->since; });
  nlohmann::json findings = nlohmann::json::array();
  size_t bytes = 40;  // the envelope
  size_t left_out = 0;
  for (const auto& [k, e] : order) {
    nlohmann::json f = {{"check", k->first},
                        {"subject", k->second},
                        {"severity", std::string(SeverityName(e->severity))},
                        {"since", FormatRfc3339(e->since)}};
    size_t size = f.dump().size() + 1;
    if (bytes + size > max_bytes) {
      ++left_out;
      continue;
    }
    bytes += size;
    findings.push_back(std::move(f));
  }
  if (dropped != nullptr) *dropped = left_out;
  return nlohmann::json{{"version", 1}, {"findings", findings}}.dump();
}

std::optional<TimePoint> FindingTracker::NextClear(std::chrono::milliseconds clear_after) const {
  std::optional<TimePoint> next;
  for (const auto& [key, e] : active_) {
    if (!e.missing_since) continue;
    TimePoint due = *e.missing_since + clear_after;
    if (!next || due < *next) next = due;
  }
  return next;
}

std::vector<Transition> FindingTracker::Update(std::vector<Finding>& findings, TimePoint now,
                                               std::chrono::milliseconds clear_after) {
  std::map<Key, Entry> next;
  std::vector<Transition> out;
  for (Finding& f : findings) {
    Key key{f.check, f.subject};
    auto prev = active_.find(key);
    // A finding active since before keeps the earlier onset: what the objects show can move
    // later (a pod re-created, a condition rewritten) while the failure went on.
    if (prev != active_.end()) {
      f.since = f.since ? std::min(*f.since, prev->second.since) : prev->second.since;
    } else if (!f.since) {
      f.since = now;
    }
    bool fresh = !next.count(key);
    if (prev == active_.end() && fresh) out.push_back({true, f});
    Entry& e = next[key];
    // One entry per check and subject: the worst severity and the earliest onset among them.
    if (fresh || f.severity > e.severity) {
      e.severity = f.severity;
      e.message = f.message;
    }
    e.since = fresh ? *f.since : std::min(e.since, *f.since);
  }
  for (const auto& [key, e] : active_) {
    if (next.count(key)) continue;
    TimePoint missing = e.missing_since.value_or(now);
    if (now - missing < clear_after) {
      Entry& kept = next[key];  // gone for now: cleared if it stays gone
      kept = e;
      kept.missing_since = missing;
      continue;
    }
    Finding f;
    f.check = key.first;
    f.subject = key.second;
    f.severity = e.severity;
    f.message = e.message;
    f.since = e.since;
    out.push_back({false, std::move(f)});
  }
  active_ = std::move(next);
  return out;
}

}  // namespace tocsin::controller
