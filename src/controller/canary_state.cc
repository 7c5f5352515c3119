// The canary runner's state in its anchor ConfigMap (the history the planner reads, and the
// runner's own: canary.RunnerState), adoption of a round an earlier leader left, the production
// reference, and the findings and metrics built from the history.
#include <fmt/format.h>

#include <random>

#include "base/json_fields.h"
#include "base/strings.h"
#include "canary/catalog.h"
#include "controller/canary_metrics.h"
#include "controller/canary_runner.h"
#include "controller/log.h"

namespace tocsin::controller {

using nlohmann::json;

namespace {

// The catalogue's: the canary's own setup and slow or stale coverage warn, a broken node errs.
Severity SeverityOf(const std::string& check) {
  const CheckInfo* info = canary::Catalog().Find(check);
  return info ? info->severity : Severity::kError;
}

std::string Token() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 8; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

// Whether `meta` (an object's metadata) names `uid` among its ownerReferences.
bool OwnedBy(const json& meta, const std::string& uid) {
  if (uid.empty() || !meta.is_object() || !meta.contains("ownerReferences") ||
      !meta["ownerReferences"].is_array()) {
    return false;
  }
  for (const json& o : meta["ownerReferences"]) {
    if (StringField(o, "uid", 128) == uid) return true;
  }
  return false;
}

}  // namespace

Status CanaryRunner::LoadState() {
  const std::string path =
      "/api/v1/namespaces/" + options_.job.ns + "/configmaps/" + options_.state_name;
  auto body = client_->Get(path);
  if (!body.ok()) return body.status();
  if (body->size() > canary::kMaxHistoryInput + canary::kMaxRunnerStateBytes + 65536) {
    return Status::ParseError("ConfigMap " + options_.state_name + " is larger than it can be");
  }
  json cm = json::parse(*body, nullptr, false);
  if (!cm.is_object() || !cm.contains("metadata")) {
    return Status::ParseError("ConfigMap " + options_.state_name + " is not an object");
  }
  owner_uid_ = StringField(cm["metadata"], "uid", 128);
  state_version_ = StringField(cm["metadata"], "resourceVersion", 128);
  const json& data = cm.contains("data") && cm["data"].is_object() ? cm["data"] : json::object();
  history_ = {};
  state_ = {};
  std::string history = StringField(data, "history", canary::kMaxHistoryInput + 1);
  if (!history.empty()) {
    auto h = canary::DecodeHistory(history);
    if (h.ok()) {
      history_ = std::move(*h);
    } else {
      Log("canary: the history in ConfigMap " + options_.state_name + " cannot be read (" +
          h.status().message() + "): starting afresh");
    }
  }
  std::string runner = StringField(data, "runner", canary::kMaxRunnerStateBytes + 1);
  if (!runner.empty()) {
    auto st = canary::DecodeRunnerState(runner);
    if (st.ok()) {
      state_ = std::move(*st);
    } else {
      Log("canary: the runner state in ConfigMap " + options_.state_name + " cannot be read (" +
          st.status().message() + "): starting afresh");
    }
  }
  return Status::Ok();
}

Status CanaryRunner::SaveState() {
  if (!leader_()) return Status::Unavailable("not the leader any more");
  size_t dropped = 0;
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", options_.state_name},
               {"namespace", options_.job.ns},
               {"resourceVersion", state_version_},
               {"labels", {{"app.kubernetes.io/name", "tocsin-canary"}}}}},
             {"data",
              {{"history", canary::EncodeHistory(history_, canary::kDefaultHistoryBytes, &dropped)},
               {"runner", canary::EncodeRunnerState(state_)}}}};
  if (dropped) Log(fmt::format("canary: {} history entries did not fit in the ConfigMap", dropped));
  auto body = client_->Send(
      "PUT", "/api/v1/namespaces/" + options_.job.ns + "/configmaps/" + options_.state_name,
      cm.dump(), "application/json");
  if (!body.ok()) {
    // Someone else wrote it (a new leader?), or the API refused: read it again before going on,
    // and say so until a save works.
    SetupProblem("cannot save the history in ConfigMap " + options_.job.ns + "/" +
                 options_.state_name + ": " + body.status().message());
    adopted_ = false;
    return body.status();
  }
  if (setup_problem_.starts_with("cannot save the history")) SetupProblem("");
  json saved = json::parse(*body, nullptr, false);
  if (saved.is_object() && saved.contains("metadata")) {
    state_version_ = StringField(saved["metadata"], "resourceVersion", 128);
  }
  return Status::Ok();
}

Status CanaryRunner::ReadReference() {
  if (options_.env_from.empty()) {
    reference_read_ = true;
    return Status::Ok();
  }
  std::vector<std::string> parts;
  for (auto p : Split(options_.env_from, '/')) parts.emplace_back(p);
  // Newer API versions first: batch/v1 CronJobs are 1.21+, kubeflow.org/v1 MPIJobs the training
  // operator's and v2beta1 the MPI operator's.
  static const std::map<std::string, std::vector<std::string>> kPaths = {
      {"configmap", {"/api/v1/namespaces/{}/configmaps/{}"}},
      {"job", {"/apis/batch/v1/namespaces/{}/jobs/{}"}},
      {"cronjob",
       {"/apis/batch/v1/namespaces/{}/cronjobs/{}", "/apis/batch/v1beta1/namespaces/{}/cronjobs/{}"}},
      {"pytorchjob", {"/apis/kubeflow.org/v1/namespaces/{}/pytorchjobs/{}"}},
      {"mpijob",
       {"/apis/kubeflow.org/v1/namespaces/{}/mpijobs/{}",
        "/apis/kubeflow.org/v2beta1/namespaces/{}/mpijobs/{}"}},
      {"jobset", {"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets/{}"}}};
  auto paths = parts.size() == 3 ? kPaths.find(parts[0]) : kPaths.end();
  if (paths == kPaths.end()) {
    return Status::InvalidArgument("--canary-env-from " + options_.env_from +
                                   ": expected KIND/NAMESPACE/NAME (configmap, job, cronjob, "
                                   "pytorchjob, mpijob or jobset)");
  }
  Result<std::string> body = Status::NotFound("");
  for (const std::string& path : paths->second) {
    body = client_->Get(fmt::format(fmt::runtime(path), parts[1], parts[2]));
    if (body.ok() || body.status().code() != StatusCode::kNotFound) break;
  }
  if (!body.ok()) {
    std::string what = "cannot read the canaries' reference " + options_.env_from + ": " +
                       body.status().message();
    if (reference_read_) Log("canary: " + what + " (the environment read before is kept)");
    return Status::Unavailable(what);
  }
  if (body->size() > (8u << 20)) return Status::ParseError(options_.env_from + " is over 8 MiB");
  auto ref = canary::ReadReference(json::parse(*body, nullptr, false));
  if (!ref.ok()) return Status::InvalidArgument(options_.env_from + ": " + ref.status().message());
  if (!reference_read_ || ref->env != options_.job.env) {
    Log(fmt::format("canary: {} variables and {} tolerations from {}{}", ref->env.size(),
                    ref->tolerations.size(), options_.env_from,
                    ref->skipped ? fmt::format(" ({} from elsewhere, not copied)", ref->skipped)
                                 : ""));
  }
  options_.job.env = ref->env;
  options_.job.tolerations = ref->tolerations;
  reference_read_ = true;
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
  // A round an earlier leader left: its Jobs say which pairs are still on their way. Only Jobs
  // this ConfigMap owns (labels anyone can copy). The newest round is carried on; older
  // leftovers are deleted.
  auto list = client_->Get("/apis/batch/v1/namespaces/" + ns +
                           "/jobs?labelSelector=tocsin.io%2Fcanary%3Dtrue&limit=1000");
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
      if (!OwnedBy(meta, owner_uid_)) continue;
      const json& labels = meta.contains("labels") ? meta["labels"] : json::object();
      const json& ann = meta.contains("annotations") ? meta["annotations"] : json::object();
      std::string round = StringField(labels, canary::kRoundLabel, 63);
      auto pair = ParseInt64(StringField(labels, canary::kPairLabel, 10));
      auto rank = ParseInt64(StringField(labels, canary::kRankLabel, 2));
      std::string node = StringField(ann, canary::kNodeAnnotation, 253);
      std::string partner = StringField(ann, canary::kPartnerAnnotation, 253);
      if (round.empty() || !pair || !rank || *pair < 0 || *pair > 100000 || *rank < 0 ||
          *rank > 1 || !canary::ValidNodeName(node) || !canary::ValidNodeName(partner)) {
        continue;
      }
      PairRun& p = rounds[round][static_cast<int>(*pair)];
      p.index = static_cast<int>(*pair);
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
      std::vector<canary::NodeInfo> all = FabricNodes(nullptr);
      SetBlocks(round, all);
      round_ = std::move(round);
      // The window the round was planned with, for the results still to come.
      window_ = Window(all.size());
    }
  }
  return Status::Ok();
}

void CanaryRunner::Rebuild(TimePoint now) {
  std::vector<canary::NodeInfo> all = FabricNodes(nullptr);
  std::chrono::seconds window = Window(all.size());
  std::vector<Finding> out;
  auto detail = [&](const std::string& key, Finding& f, const std::string& fallback) {
    auto it = state_.details.find(key);
    if (it == state_.details.end()) {
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
  for (const auto& [check, fault] : state_.faults) {
    out.push_back({.check = check, .severity = SeverityOf(check), .subject = "canary",
                   .message = fault.second, .since = fault.first});
  }
  if (!setup_problem_.empty()) {
    out.push_back({.check = canary::kSetup,
                   .severity = Severity::kError,
                   .subject = "canary",
                   .message = "canaries cannot run: " + setup_problem_,
                   .since = setup_since_});
  }
  std::map<std::string, double> last_pass;
  for (const auto& n : all) {
    auto last = canary::LastPass(history_, n.name);
    if (last) {
      last_pass[n.name] = static_cast<double>(
          std::chrono::duration_cast<std::chrono::seconds>(last->time_since_epoch()).count());
    }
    auto seen = state_.first_seen.find(n.name);
    std::optional<TimePoint> from = last;
    if (!from && seen != state_.first_seen.end()) from = seen->second;
    if (from && now - *from > window) {
      out.push_back({.check = canary::kStale,
                     .severity = Severity::kWarning,
                     .subject = n.name,
                     .message = last ? fmt::format("no canary has passed on {} since {} (more "
                                                   "than {}s: it was busy, failing or not planned)",
                                                   n.name, FormatRfc3339(*last), window.count())
                                     : fmt::format("no canary has passed on {} since the canaries "
                                                   "first saw it at {} (more than {}s)",
                                                   n.name, FormatRfc3339(*from), window.count()),
                     .since = *from + window});
    }
  }
  canary::Coverage c = canary::ComputeCoverage(all, history_, now, window);
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
