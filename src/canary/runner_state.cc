#include "canary/runner_state.h"

#include <algorithm>

#include "canary/history.h"
#include "base/json_fields.h"

namespace tocsin::canary {

using nlohmann::json;

std::string EncodeRunnerState(RunnerState st) {
  while (st.details.size() > kMaxDetails) {
    auto oldest = st.details.begin();
    for (auto it = st.details.begin(); it != st.details.end(); ++it) {
      if (it->second.value("at", "") < oldest->second.value("at", "")) oldest = it;
    }
    st.details.erase(oldest);
  }
  json r = json::object();
  if (st.last_round_start) r["last_round_start"] = FormatRfc3339(*st.last_round_start);
  r["faults"] = json::object();
  for (const auto& [check, f] : st.faults) {
    r["faults"][check] = {{"since", FormatRfc3339(f.first)}, {"message", f.second}};
  }
  r["details"] = json::object();
  for (const auto& [key, d] : st.details) r["details"][key] = d;
  r["fabric"] = json::object();
  for (const auto& [name, seen] : st.first_seen) r["fabric"][name] = FormatRfc3339(seen);
  return r.dump();
}

Result<RunnerState> DecodeRunnerState(std::string_view text) {
  if (text.size() > kMaxRunnerStateBytes) {
    return Status::ParseError("the runner state is " + std::to_string(text.size()) +
                              " bytes (at most " + std::to_string(kMaxRunnerStateBytes) + ")");
  }
  // Values nested deeper than the state has are discarded as they are parsed, so that no deep
  // document is ever built (dumping or copying one would recurse).
  json r = json::parse(
      text, [](int depth, json::parse_event_t, json&) { return depth <= kMaxRunnerStateDepth; },
      false);
  if (!r.is_object()) return Status::ParseError("the runner state is not a JSON object");
  RunnerState st;
  st.last_round_start = TimeField(r, "last_round_start");
  if (r.contains("faults") && r["faults"].is_object()) {
    for (const auto& [check, f] : r["faults"].items()) {
      auto since = TimeField(f, "since");
      if (since && ValidCause(check) && check.starts_with("canary.") &&
          st.faults.size() < kMaxFaults) {
        st.faults[check] = {*since, StringField(f, "message", 1024)};
      }
    }
  }
  if (r.contains("details") && r["details"].is_object()) {
    for (const auto& [key, d] : r["details"].items()) {
      if (st.details.size() >= kMaxDetails || key.size() > 600 || !d.is_object()) continue;
      json detail = {{"message", StringField(d, "message", 1024)}, {"at", StringField(d, "at", 40)}};
      const json* ev = d.contains("evidence") ? &d["evidence"] : nullptr;
      detail["evidence"] =
          ev && ev->is_object() && ev->dump().size() <= kMaxDetailBytes ? *ev : json::object();
      st.details[key] = std::move(detail);
    }
  }
  if (r.contains("fabric") && r["fabric"].is_object()) {
    for (const auto& [name, seen] : r["fabric"].items()) {
      auto t = seen.is_string() ? ParseRfc3339(seen.get_ref<const std::string&>()) : std::nullopt;
      if (t && ValidNodeName(name) && st.first_seen.size() < kMaxNodes) st.first_seen[name] = *t;
    }
  }
  return st;
}

}  // namespace tocsin::canary
