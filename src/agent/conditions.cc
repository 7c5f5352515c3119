#include "agent/conditions.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/report.h"
#include "base/strings.h"
#include "gpu/catalog.h"

namespace tocsin::agent {
namespace {

bool IsUnknownFinding(const Finding& f) {
  return f.evidence.is_object() && f.evidence.value("result", "") == "unknown";
}

struct Spec {
  const char* type;
  const char* ok_reason;
  const char* ok_message;
};
constexpr Spec kSpecs[] = {
    {kRdmaFabricDegraded, "RDMAFabricHealthy", "RDMA ports and fabric counters look healthy"},
    {kSharedStorageDegraded, "SharedStorageHealthy",
     "shared filesystem mounts, Lustre imports and the storage probe look healthy"},
    {kGpuNicAffinityBroken, "GPUNICAffinityOK", "every GPU has an RDMA NIC close to it"},
};

std::string Summarise(const std::vector<const Finding*>& findings) {
  std::string msg;
  size_t shown = 0;
  for (const Finding* f : findings) {
    if (shown == 3) break;
    if (!msg.empty()) msg += "; ";
    msg += f->subject + ": " + f->message;
    ++shown;
  }
  if (findings.size() > shown) msg += " (+" + std::to_string(findings.size() - shown) + " more)";
  if (msg.size() > 1024) msg = msg.substr(0, 1021) + "...";
  return msg;
}

}  // namespace

std::string ReasonFromCheck(std::string_view check) {
  std::string out;
  bool upper = true;
  for (char c : check) {
    if (c == '.' || c == '-' || c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::span<const ConditionRule> ConditionRules() {
  static constexpr ConditionRule kRules[] = {
      {"rdma.*", kRdmaFabricDegraded},
      {"node.fabric.*", kRdmaFabricDegraded},
      {"storage.*", kSharedStorageDegraded},
      {"lustre.*", kSharedStorageDegraded},
      {gpu::kNicAffinity, kGpuNicAffinityBroken},
  };
  return kRules;
}

bool RuleMatches(std::string_view pattern, std::string_view check) {
  if (pattern.ends_with(".*")) return check.starts_with(pattern.substr(0, pattern.size() - 1));
  return check == pattern;
}

std::string ConditionTypeFor(std::string_view check) {
  for (const auto& rule : ConditionRules()) {
    if (RuleMatches(rule.pattern, check)) return rule.condition;
  }
  return "";
}

std::vector<CheckStatus> EvaluateChecks(const std::vector<TaskState>& tasks) {
  std::vector<CheckStatus> out;
  for (const auto& t : tasks) {
    std::vector<std::string> ids = t.checks;
    if (t.output) {
      for (const auto& f : t.output->findings) {
        if (std::find(ids.begin(), ids.end(), f.check) == ids.end()) ids.push_back(f.check);
      }
    }
    for (const auto& id : ids) {
      CheckStatus cs;
      cs.check = id;
      cs.task = t.name;
      cs.last_run = t.last_run;
      cs.duration_s = t.duration_s;
      if (t.outcome != Outcome::kOk || !t.output) {
        cs.value = -1;
        cs.why = t.outcome == Outcome::kNever
                     ? "not run yet"
                     : std::string(OutcomeName(t.outcome)) + ": " + t.error;
        out.push_back(std::move(cs));
        continue;
      }
      const Finding* failing = nullptr;
      const Finding* unknown = nullptr;
      for (const auto& f : t.output->findings) {
        if (f.check != id) continue;
        if (IsUnknownFinding(f)) {
          if (!unknown) unknown = &f;
        } else if (f.severity >= Severity::kWarning) {
          if (!failing || f.severity > failing->severity) failing = &f;
        }
      }
      if (failing) {
        cs.value = 0;
        cs.why = failing->subject + ": " + failing->message;
      } else if (unknown) {
        cs.value = -1;
        cs.why = unknown->subject + ": " + unknown->message;
      } else {
        cs.value = 1;
      }
      out.push_back(std::move(cs));
    }
  }
  return out;
}

std::vector<Finding> CurrentFindings(const std::vector<TaskState>& tasks) {
  std::vector<Finding> out;
  for (const auto& t : tasks) {
    if (t.outcome == Outcome::kOk && t.output) {
      out.insert(out.end(), t.output->findings.begin(), t.output->findings.end());
    }
  }
  SortFindings(out);
  return out;
}

std::vector<NodeCondition> EvaluateConditions(const std::vector<TaskState>& tasks,
                                              const std::map<std::string, NodeCondition>& previous,
                                              TimePoint now, const ConditionOptions& options) {
  std::vector<CheckStatus> checks = EvaluateChecks(tasks);
  std::vector<Finding> findings = CurrentFindings(tasks);
  std::vector<NodeCondition> out;

  auto settle = [&](NodeCondition c, std::optional<TimePoint> onset) {
    auto it = previous.find(c.type);
    if (it != previous.end() && it->second.status == c.status) {
      c.last_transition = it->second.last_transition;
    } else {
      c.last_transition = onset && *onset <= now ? *onset : now;
    }
    out.push_back(std::move(c));
  };

  for (const Spec& spec : kSpecs) {
    NodeCondition c;
    c.type = spec.type;
    std::vector<const Finding*> bad;
    for (const auto& f : findings) {
      if (ConditionTypeFor(f.check) == spec.type && f.severity >= options.min_severity &&
          !IsUnknownFinding(f)) {
        bad.push_back(&f);
      }
    }
    std::vector<std::string> unknown;
    for (const auto& cs : checks) {
      if (cs.value == -1 && ConditionTypeFor(cs.check) == spec.type) unknown.push_back(cs.check);
    }
    std::optional<TimePoint> onset;
    if (!bad.empty()) {
      c.status = "True";
      c.reason = ReasonFromCheck(bad.front()->check);  // the worst (findings are sorted)
      c.message = Summarise(bad);
      for (const Finding* f : bad) {
        if (f->since && (!onset || *f->since < *onset)) onset = f->since;
      }
    } else if (!unknown.empty()) {
      c.status = "Unknown";
      c.reason = "ChecksUnknown";
      std::sort(unknown.begin(), unknown.end());
      unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
      c.message = "cannot tell: unknown checks " + Join(unknown, ", ");
    } else {
      c.status = "False";
      c.reason = spec.ok_reason;
      c.message = spec.ok_message;
    }
    settle(std::move(c), onset);
  }

  NodeCondition stale;
  stale.type = kTocsinChecksStale;
  std::vector<std::string> why;
  bool timed_out = false;
  for (const auto& t : tasks) {
    auto window =
        std::chrono::duration_cast<Clock::duration>(t.interval * options.stale_factor + t.timeout);
    bool old = t.last_ok ? now - *t.last_ok > window : t.outcome != Outcome::kNever;
    if (t.outcome == Outcome::kTimeout || t.outcome == Outcome::kStuck) timed_out = true;
    if (t.outcome != Outcome::kOk && t.outcome != Outcome::kNever) {
      why.push_back(t.name + " " + std::string(OutcomeName(t.outcome)) + ": " + t.error);
    } else if (old) {
      why.push_back(t.name + ": no successful run since " +
                    (t.last_ok ? FormatRfc3339(*t.last_ok) : std::string("start")));
    }
  }
  std::set<std::string> unknown_checks;
  for (const auto& cs : checks) {
    if (cs.value == -1 && !cs.why.empty() && !cs.why.starts_with("not run yet")) {
      unknown_checks.insert(cs.check);
    }
  }
  if (!why.empty() || !unknown_checks.empty()) {
    stale.status = "True";
    stale.reason = timed_out ? "ChecksTimedOut" : !why.empty() ? "ChecksFailing" : "ChecksUnknown";
    std::string msg = Join(why, "; ");
    if (!unknown_checks.empty()) {
      if (!msg.empty()) msg += "; ";
      msg += "unknown: " +
             Join(std::vector<std::string>(unknown_checks.begin(), unknown_checks.end()), ", ");
    }
    stale.message = msg.size() > 1024 ? msg.substr(0, 1021) + "..." : msg;
  } else {
    stale.status = "False";
    stale.reason = "ChecksFresh";
    stale.message = "every check ran within its interval and could read its input";
  }
  settle(std::move(stale), std::nullopt);
  return out;
}

nlohmann::json ConditionsPatch(const std::vector<NodeCondition>& conditions, TimePoint heartbeat) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : conditions) {
    list.push_back({{"type", c.type},
                    {"status", c.status},
                    {"reason", c.reason},
                    {"message", c.message},
                    {"lastHeartbeatTime", FormatRfc3339(heartbeat)},
                    {"lastTransitionTime", FormatRfc3339(c.last_transition)}});
  }
  return {{"status", {{"conditions", list}}}};
}

}  // namespace tocsin::agent
