// The canary runner's state in its anchor ConfigMap (the history the planner reads, and what the
// findings say), adoption of a round an earlier leader left, and the findings and metrics built
// from the history.
#include <fmt/format.h>

#include <random>

#include "base/strings.h"
#include "controller/canary_metrics.h"
#include "controller/canary_runner.h"
#include "controller/log.h"

namespace tocsin::controller {

using nlohmann::json;

namespace {

constexpr size_t kMaxHistoryBytes = 512 << 10;
constexpr size_t kMaxRunnerBytes = 256 << 10;
constexpr size_t kMaxDetails = 128;

std::optional<TimePoint> TimeField(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_string()) return std::nullopt;
  return ParseRfc3339(o[key].get<std::string>());
}

std::string StringField(const json& o, const char* key, size_t max) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_string()) return "";
  std::string s = o[key].get<std::string>();
  return s.size() > max ? s.substr(0, max) : s;
}

Severity SeverityOf(const std::string& check) {
  if (check == "canary.stale" || check == "canary.busbw.low" || check == "canary.placement" ||
      check == "canary.admission") {
    return Severity::kWarning;
  }
  return Severity::kError;
}

std::string Token() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 8; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

}  // namespace

Status CanaryRunner::LoadState() {
  const std::string path =
      "/api/v1/namespaces/" + options_.job.ns + "/configmaps/" + options_.state_name;
  auto body = client_->Get(path);
  if (!body.ok()) return body.status();
  json cm = json::parse(*body, nullptr, false);
  if (!cm.is_object() || !cm.contains("metadata")) {
    return Status::ParseError("ConfigMap " + options_.state_name + " is not an object");
  }
  owner_uid_ = StringField(cm["metadata"], "uid", 128);
  state_version_ = StringField(cm["metadata"], "resourceVersion", 128);
  const json& data = cm.contains("data") && cm["data"].is_object() ? cm["data"] : json::object();
  std::string history = StringField(data, "history", kMaxHistoryBytes + 1);
  if (!history.empty()) {
    auto h = canary::DecodeHistory(history);
    if (h.ok()) {
      history_ = std::move(*h);
    } else {
      Log("canary: the history in ConfigMap " + options_.state_name +
          " cannot be read (" + h.status().message() + "): starting afresh");
      history_ = {};
    }
  }
  std::string runner = StringField(data, "runner", kMaxRunnerBytes + 1);
  json r = runner.size() > kMaxRunnerBytes ? json() : json::parse(runner, nullptr, false);
  if (r.is_object()) {
    last_round_start_ = TimeField(r, "last_round_start");
    canary_faults_.clear();
    if (r.contains("faults") && r["faults"].is_object()) {
      for (const auto& [check, f] : r["faults"].items()) {
        auto since = TimeField(f, "since");
        if (since && check.rfind("canary.", 0) == 0 && canary_faults_.size() < 16) {
          canary_faults_[check] = {*since, StringField(f, "message", 1024)};
        }
      }
    }
    details_.clear();
    if (r.contains("details") && r["details"].is_object()) {
      for (const auto& [key, d] : r["details"].items()) {
        if (details_.size() >= kMaxDetails || key.size() > 600 || !d.is_object()) continue;
        details_[key] = {{"message", StringField(d, "message", 1024)},
                         {"at", StringField(d, "at", 40)},
                         {"evidence", d.contains("evidence") && d["evidence"].is_object() &&
                                              d["evidence"].dump().size() <= 2048
                                          ? d["evidence"]
                                          : json::object()}};
      }
    }
    if (r.contains("fabric") && r["fabric"].is_object()) {
      for (const auto& [name, seen] : r["fabric"].items()) {
        auto t = seen.is_string() ? ParseRfc3339(seen.get<std::string>()) : std::nullopt;
        if (t && canary::ValidNodeName(name) && known_fabric_.size() < canary::kMaxNodes) {
          known_fabric_.emplace(name, *t);
        }
      }
    }
  }
  return Status::Ok();
}

Status CanaryRunner::SaveState() {
  // The newest details only: the ConfigMap must stay well under the API's 1 MiB.
  while (details_.size() > kMaxDetails) {
    auto oldest = details_.begin();
    for (auto it = details_.begin(); it != details_.end(); ++it) {
      if (it->second.value("at", "") < oldest->second.value("at", "")) oldest = it;
    }
    details_.erase(oldest);
  }
  json r = json::object();
  if (last_round_start_) r["last_round_start"] = FormatRfc3339(*last_round_start_);
  r["faults"] = json::object();
  for (const auto& [check, f] : canary_faults_) {
    r["faults"][check] = {{"since", FormatRfc3339(f.first)}, {"message", f.second}};
  }
  r["details"] = json::object();
  for (const auto& [key, d] : details_) r["details"][key] = d;
  r["fabric"] = json::object();
  for (const auto& [name, seen] : known_fabric_) r["fabric"][name] = FormatRfc3339(seen);
  size_t dropped = 0;
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", options_.state_name},
               {"namespace", options_.job.ns},
               {"resourceVersion", state_version_},
               {"labels", {{"app.kubernetes.io/name", "tocsin-canary"}}}}},
             {"data",
              {{"history", canary::EncodeHistory(history_, kMaxHistoryBytes, &dropped)},
               {"runner", r.dump()}}}};
  if (dropped) Log(fmt::format("canary: {} history entries did not fit in the ConfigMap", dropped));
  auto body = client_->Send(
      "PUT", "/api/v1/namespaces/" + options_.job.ns + "/configmaps/" + options_.state_name,
      cm.dump(), "application/json");
  if (!body.ok()) {
    Log("canary: saving the history: " + body.status().message());
    adopted_ = false;  // someone else wrote it (a new leader?): read it again before going on
    return body.status();
  }
  json saved = json::parse(*body, nullptr, false);
  if (saved.is_object() && saved.contains("metadata")) {
    state_version_ = StringField(saved["metadata"], "resourceVersion", 128);
  }
  return Status::Ok();
}

Status CanaryRunner::Adopt(TimePoint now) {
  const std::string ns = options_.job.ns;
  Status st = LoadState();
  if (st.code() == StatusCode::kNotFound) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", options_.state_name},
                 {"namespace", ns},
                 {"labels", {{"app.kubernetes.io/name", "tocsin-canary"}}}}},
               {"data", json::object()}};
    auto body = client_->Send("POST", "/api/v1/namespaces/" + ns + "/configmaps", cm.dump(),
                              "application/json");
    if (!body.ok()) {
      return Status::Unavailable("cannot create ConfigMap " + ns + "/" + options_.state_name +
                                 " (the canaries' state and owner): " + body.status().message());
    }
    st = LoadState();
  }
  if (!st.ok()) return st;
  options_.job.owner_name = options_.state_name;
  options_.job.owner_uid = owner_uid_;
  // The ranks' shared secret: generated here once, never in a manifest.
  auto secret = client_->Get("/api/v1/namespaces/" + ns + "/secrets/" + options_.job.token_secret);
  if (!secret.ok() && secret.status().code() == StatusCode::kNotFound) {
    json s = {{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata",
               {{"name", options_.job.token_secret},
                {"namespace", ns},
                {"ownerReferences",
                 {{{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"name", options_.state_name},
                   {"uid", owner_uid_}}}}}},
              {"stringData", {{"token", Token()}}}};
    auto made = client_->Send("POST", "/api/v1/namespaces/" + ns + "/secrets", s.dump(),
                              "application/json");
    if (!made.ok()) {
      return Status::Unavailable("cannot create Secret " + ns + "/" + options_.job.token_secret +
                                 " (the canary ranks' token): " + made.status().message());
    }
  } else if (!secret.ok()) {
    return Status::Unavailable("cannot read Secret " + ns + "/" + options_.job.token_secret + ": " +
                               secret.status().message());
  }
  // The production template whose fabric environment the canaries copy.
  if (!options_.env_from.empty()) {
    std::vector<std::string> parts;
    for (auto p : Split(options_.env_from, '/')) parts.emplace_back(p);
    static const std::map<std::string, std::string> kPaths = {
        {"configmap", "/api/v1/namespaces/{}/configmaps/{}"},
        {"job", "/apis/batch/v1/namespaces/{}/jobs/{}"},
        {"cronjob", "/apis/batch/v1beta1/namespaces/{}/cronjobs/{}"},
        {"pytorchjob", "/apis/kubeflow.org/v1/namespaces/{}/pytorchjobs/{}"},
        {"mpijob", "/apis/kubeflow.org/v2beta1/namespaces/{}/mpijobs/{}"},
        {"jobset", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets/{}"}};
    auto path = parts.size() == 3 ? kPaths.find(parts[0]) : kPaths.end();
    if (path == kPaths.end()) {
      return Status::InvalidArgument("--canary-env-from " + options_.env_from +
                                     ": expected KIND/NAMESPACE/NAME (configmap, job, cronjob, "
                                     "pytorchjob, mpijob or jobset)");
    }
    auto body = client_->Get(fmt::format(fmt::runtime(path->second), parts[1], parts[2]));
    if (!body.ok()) {
      return Status::Unavailable("cannot read the canaries' reference " + options_.env_from +
                                 ": " + body.status().message());
    }
    auto ref = canary::ReadReference(json::parse(*body, nullptr, false));
    if (!ref.ok()) return Status::InvalidArgument(options_.env_from + ": " + ref.status().message());
    options_.job.env = ref->env;
    options_.job.tolerations = ref->tolerations;
    Log(fmt::format("canary: {} variables and {} tolerations from {}{}", ref->env.size(),
                    ref->tolerations.size(), options_.env_from,
                    ref->skipped ? fmt::format(" ({} from elsewhere, not copied)", ref->skipped)
                                 : ""));
  }
  // A round an earlier leader left: its Jobs say which pairs are still on their way. The newest
  // round is carried on; older leftovers are deleted.
  auto list = client_->Get("/apis/batch/v1/namespaces/" + ns + "/jobs?labelSelector=tocsin.io%2Fcanary%3Dtrue");
  if (!list.ok()) {
    return Status::Unavailable("cannot list the canary Jobs in " + ns + ": " +
                               list.status().message());
  }
  json jobs = json::parse(*list, nullptr, false);
  std::map<std::string, std::map<int, PairRun>> rounds;
  if (jobs.is_object() && jobs.contains("items") && jobs["items"].is_array()) {
    for (const json& item : jobs["items"]) {
      if (!item.is_object() || !item.contains("metadata")) continue;
      const json& meta = item["metadata"];
      const json& labels = meta.contains("labels") ? meta["labels"] : json::object();
      const json& ann = meta.contains("annotations") ? meta["annotations"] : json::object();
      std::string round = StringField(labels, canary::kRoundLabel, 63);
      auto pair = ParseInt64(StringField(labels, canary::kPairLabel, 10));
      auto rank = ParseInt64(StringField(labels, canary::kRankLabel, 2));
      if (round.empty() || !pair || !rank || *pair < 0 || *pair > 100000 || *rank < 0 ||
          *rank > 1) {
        continue;
      }
      PairRun& p = rounds[round][static_cast<int>(*pair)];
      p.index = static_cast<int>(*pair);
      std::string node = StringField(ann, canary::kNodeAnnotation, 253);
      std::string partner = StringField(ann, canary::kPartnerAnnotation, 253);
      p.a = *rank == 0 ? node : partner;
      p.b = *rank == 0 ? partner : node;
      p.why = StringField(ann, canary::kWhyAnnotation, 32);
      RankJob& r = p.ranks[*rank];
      r.name = StringField(meta, "name", 253);
      r.uid = StringField(meta, "uid", 128);
      r.created = TimeField(meta, "creationTimestamp").value_or(now);
    }
  }
  round_.reset();
  if (!rounds.empty()) {
    auto newest = std::prev(rounds.end());  // ids are base36 seconds of equal length for years
    for (auto it = rounds.begin(); it != newest; ++it) {
      for (auto& [i, p] : it->second) {
        for (const RankJob& r : p.ranks) {
          if (!r.name.empty()) DeleteJob(r.name);
        }
      }
    }
    Round round;
    round.id = newest->first;
    round.started = now;
    for (auto& [i, p] : newest->second) {
      if (p.ranks[0].name.empty()) {  // rank 0 judged and gone: a leftover rank 1
        if (!p.ranks[1].name.empty()) DeleteJob(p.ranks[1].name);
        continue;
      }
      round.pairs.push_back(std::move(p));
    }
    if (!round.pairs.empty()) {
      Log(fmt::format("canary: carrying on round {} ({} pairs in flight)", round.id,
                      round.pairs.size()));
      round_ = std::move(round);
    }
  }
  return Status::Ok();
}

void CanaryRunner::Rebuild(TimePoint now) {
  std::vector<canary::NodeInfo> all = FabricNodes(nullptr);
  std::vector<Finding> out;
  auto detail = [&](const std::string& key, Finding& f, const std::string& fallback) {
    auto it = details_.find(key);
    if (it == details_.end()) {
      f.message = fallback;
      return;
    }
    f.message = it->second.value("message", fallback);
    f.evidence = it->second.value("evidence", json::object());
    f.evidence["judged_at"] = it->second.value("at", "");
  };
  canary::Verdicts v = canary::Attribute(all, history_, now);
  for (const auto& n : v.nodes) {
    Finding f{.check = n.cause, .severity = SeverityOf(n.cause), .subject = n.node, .since = n.since};
    detail(n.cause + "|" + n.node, f,
           fmt::format("the canaries blame {} ({})", n.node, Join(n.partners, ", ")));
    f.evidence["partners"] = n.partners;
    out.push_back(std::move(f));
  }
  for (const auto& b : v.block_pairs) {
    Finding f{.check = b.cause,
              .severity = SeverityOf(b.cause),
              .subject = "blocks/" + b.block_a + "/" + b.block_b,
              .message = fmt::format("canaries between topology blocks {} and {} fail while each "
                                     "block's nodes pass with others: the path between the blocks",
                                     b.block_a, b.block_b),
              .since = b.since};
    json pairs = json::array();
    for (const auto& [x, y] : b.pairs) pairs.push_back({x, y});
    f.evidence["pairs"] = pairs;
    out.push_back(std::move(f));
  }
  for (const auto& s : v.suspects) {
    std::string a = std::min(s.a, s.b), b = std::max(s.a, s.b);
    Finding f{.check = s.cause, .severity = SeverityOf(s.cause), .subject = "pair/" + a + "/" + b,
              .since = s.since};
    detail(s.cause + "|" + a + "|" + b, f, "the canary between " + a + " and " + b + " failed");
    f.message += " (not yet attributed: each node is tested again with a known-good partner)";
    out.push_back(std::move(f));
  }
  for (const auto& [check, fault] : canary_faults_) {
    out.push_back({.check = check, .severity = SeverityOf(check), .subject = "canary",
                   .message = fault.second, .since = fault.first});
  }
  if (!setup_problem_.empty()) {
    out.push_back({.check = "canary.setup", .severity = Severity::kError, .subject = "canary",
                   .message = "canaries cannot run: " + setup_problem_, .since = setup_since_});
  }
  std::map<std::string, double> last_pass;
  for (const auto& n : all) {
    auto last = canary::LastPass(history_, n.name);
    if (last) {
      last_pass[n.name] = static_cast<double>(
          std::chrono::duration_cast<std::chrono::seconds>(last->time_since_epoch()).count());
    }
    auto seen = known_fabric_.find(n.name);
    std::optional<TimePoint> from = last;
    if (!from && seen != known_fabric_.end()) from = seen->second;
    if (from && now - *from > options_.stale_after) {
      out.push_back({.check = "canary.stale",
                     .severity = Severity::kWarning,
                     .subject = n.name,
                     .message = last ? fmt::format("no canary has passed on {} since {} (more "
                                                   "than {}s: it was busy, failing or not planned)",
                                                   n.name, FormatRfc3339(*last),
                                                   options_.stale_after.count())
                                     : fmt::format("no canary has passed on {} since the canaries "
                                                   "first saw it at {} (more than {}s)",
                                                   n.name, FormatRfc3339(*from),
                                                   options_.stale_after.count()),
                     .since = *from + options_.stale_after});
    }
  }
  canary::Coverage c = canary::ComputeCoverage(all, history_, now, options_.stale_after);
  metrics_->SetCoverage(c.node_ratio(), c.block_pair_ratio(), std::move(last_pass));
  bool changed;
  {
    std::lock_guard lock(mu_);
    changed = out.size() != findings_.size();
    for (size_t i = 0; !changed && i < out.size(); ++i) {
      changed = out[i].check != findings_[i].check || out[i].subject != findings_[i].subject ||
                out[i].message != findings_[i].message;
    }
    findings_ = std::move(out);
  }
  if (changed && changed_) changed_();
}

}  // namespace tocsin::controller
