#include "controller/canary_runner.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "base/strings.h"
#include "controller/canary_metrics.h"
#include "controller/log.h"

namespace tocsin::controller {

using nlohmann::json;
using Kind = canary::Judgement::Kind;

namespace {

std::string Escape(const std::string& s) {  // a label selector or field selector in a query
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

CanaryRunner::CanaryRunner(CanaryOptions options, std::unique_ptr<k8s::ApiClient> client,
                           const ObjectCache* cache, audit::Options audit,
                           std::function<bool()> leader, EventPoster* poster,
                           std::string instance, std::function<void()> changed)
    : options_(std::move(options)),
      client_(std::move(client)),
      cache_(cache),
      audit_(std::move(audit)),
      leader_(std::move(leader)),
      poster_(poster),
      instance_(std::move(instance)),
      changed_(std::move(changed)),
      metrics_(std::make_shared<Metrics>()) {
  if (options_.seed == 0) {
    options_.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  }
  client_->SetAbort(&stop_);
}

CanaryRunner::~CanaryRunner() { Stop(); }

std::shared_ptr<prometheus::Collectable> CanaryRunner::collectable() { return metrics_; }

void CanaryRunner::Start() {
  thread_ = std::thread([this] { Run(); });
}

void CanaryRunner::Stop() {
  {
    std::lock_guard lock(wait_mu_);
    stop_ = true;
  }
  wait_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<Finding> CanaryRunner::Findings() const {
  std::lock_guard lock(mu_);
  return findings_;
}

void CanaryRunner::Run() {
  while (!stop_) {
    Step(Clock::now());
    std::unique_lock lock(wait_mu_);
    wait_cv_.wait_for(lock, options_.tick, [&] { return stop_.load(); });
  }
}

void CanaryRunner::Step(TimePoint now) {
  if (!leader_()) {
    // A follower forgets the round (the leader owns it) and reads the history now and then, so
    // that its findings are the leader's.
    adopted_ = false;
    round_.reset();
    auto steady = std::chrono::steady_clock::now();
    if (steady - last_load_ >= std::chrono::seconds(30) || last_load_ == decltype(last_load_){}) {
      last_load_ = steady;
      // What this replica says is what it can read: the leader's own setup problems are the
      // leader's to report.
      Status st = LoadState();
      SetupProblem(st.ok() || st.code() == StatusCode::kNotFound
                       ? ""
                       : "cannot read the history in ConfigMap " + options_.job.ns + "/" +
                             options_.state_name + ": " + st.message());
    }
    Rebuild(now);
    return;
  }
  if (!adopted_) {
    if (Status st = Adopt(now); !st.ok()) {
      SetupProblem(st.message());
      Rebuild(now);
      return;
    }
    adopted_ = true;
    SetupProblem("");
  }
  if (round_) Advance(now);
  // A start in the future (a clock step, an edited ConfigMap) never holds the rounds back.
  if (state_.last_round_start && *state_.last_round_start > now) state_.last_round_start.reset();
  if (!round_ && leader_() &&
      (!state_.last_round_start || now - *state_.last_round_start >= options_.interval)) {
    Plan(now);
  }
  Rebuild(now);
}

void CanaryRunner::SetupProblem(const std::string& what) {
  if (what == setup_problem_) return;
  if (!what.empty()) Log("canary: " + what);
  setup_problem_ = what;
  if (what.empty()) {
    setup_since_.reset();
  } else if (!setup_since_) {
    setup_since_ = Clock::now();
  }
}

void CanaryRunner::DeleteJob(const std::string& name) {
  if (!leader_()) return;  // the new leader adopts what is left
  auto r = client_->Send("DELETE",
                         "/apis/batch/v1/namespaces/" + options_.job.ns + "/jobs/" + name,
                         R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})",
                         "application/json");
  if (!r.ok() && r.status().code() != StatusCode::kNotFound) {
    Log("canary: deleting Job " + name + ": " + r.status().message());
  }
}

Status CanaryRunner::CreateRank(PairRun& pair, int rank, const std::string& coordinator_ip,
                                TimePoint now) {
  canary::RankPlan plan{.round = round_->id,
                        .pair = pair.index,
                        .rank = rank,
                        .node = rank == 0 ? pair.a : pair.b,
                        .partner = rank == 0 ? pair.b : pair.a,
                        .why = pair.why,
                        .coordinator_ip = coordinator_ip};
  // Leadership can be lost while a request waits (up to --request-timeout, longer than a Lease):
  // checked before every write, so that a deposed leader never starts what the new one plans.
  if (!leader_()) return Status::Unavailable("not the leader any more");
  json job = canary::JobFor(options_.job, plan);
  auto body = client_->Send("POST", "/apis/batch/v1/namespaces/" + options_.job.ns + "/jobs",
                            job.dump(), "application/json");
  if (!body.ok()) return body.status();
  json created = json::parse(*body, nullptr, false);
  RankJob& r = pair.ranks[rank];
  r.name = canary::JobName(round_->id, pair.index, rank);
  if (created.is_object()) r.uid = created["metadata"].value("uid", "");
  r.created = now;
  return Status::Ok();
}

std::vector<std::string> CanaryRunner::EventsAbout(const std::string& name,
                                                   const std::string& reason) {
  auto steady = std::chrono::steady_clock::now();
  std::string key = reason + "/" + name;
  auto it = events_cache_.find(key);
  if (it != events_cache_.end() && steady - it->second.first < std::chrono::seconds(10)) {
    return it->second.second;
  }
  std::vector<std::string> out;
  auto body = client_->Get("/api/v1/namespaces/" + options_.job.ns + "/events?fieldSelector=" +
                           Escape("involvedObject.name=" + name + ",reason=" + reason) +
                           "&limit=20");
  if (body.ok()) {
    json list = json::parse(*body, nullptr, false);
    if (list.is_object() && list.contains("items") && list["items"].is_array()) {
      for (const json& e : list["items"]) {
        if (e.is_object() && e.contains("message") && e["message"].is_string()) {
          out.push_back(e["message"].get<std::string>().substr(0, 1024));
        }
      }
    }
  }
  events_cache_[key] = {steady, out};
  return out;
}

void CanaryRunner::Advance(TimePoint now) {
  // This round's pods, by pair and rank: the newest of each Job, and only pods that Job made
  // (labels anyone can copy; the owner's uid they cannot).
  std::map<std::string, std::pair<int, int>> by_uid;
  for (const PairRun& pair : round_->pairs) {
    for (int r = 0; r < 2; ++r) {
      if (!pair.ranks[r].uid.empty()) by_uid[pair.ranks[r].uid] = {pair.index, r};
    }
  }
  std::map<std::pair<int, int>, k8s::Pod> pods;
  std::map<std::string, k8s::Node> planned;  // the planned nodes as the cache shows them
  for (const PairRun& pair : round_->pairs) {
    if (pair.judged) continue;
    planned.try_emplace(pair.a);
    planned.try_emplace(pair.b);
  }
  std::set<std::string> busy;
  cache_->Read([&](const k8s::Snapshot& s) {
    busy = BusyNodesIn(s);
    for (const auto& n : s.nodes) {
      if (auto it = planned.find(n.name); it != planned.end()) it->second = n;
    }
    for (const auto& p : s.pods) {
      if (p.ns != options_.job.ns || !p.labels.count(canary::kRoundLabel)) continue;
      for (const auto& owner : p.owners) {
        auto it = by_uid.find(owner.uid);
        if (owner.kind != "Job" || it == by_uid.end()) continue;
        auto cur = pods.find(it->second);
        if (cur == pods.end() || cur->second.created < p.created) pods[it->second] = p;
      }
    }
  });
  std::optional<TimePoint> oldest_pending;
  bool all_judged = true;
  std::vector<canary::PairResult> results;  // recorded together: one attribution pass
  std::vector<PairRun*> judged;
  for (PairRun& pair : round_->pairs) {
    if (pair.judged) continue;
    canary::RankView views[2];
    bool vanished = false;
    for (int r = 0; r < 2; ++r) {
      views[r].rank = r;
      views[r].planned_node = r == 0 ? pair.a : pair.b;
      if (const k8s::Node& n = planned[views[r].planned_node]; !n.name.empty()) views[r].node = n;
      if (!pair.ranks[r].name.empty()) views[r].job_created = pair.ranks[r].created;
      auto it = pods.find({pair.index, r});
      if (it != pods.end()) {
        pair.ranks[r].pod_seen = true;
        views[r].pod = &it->second;
        const k8s::Pod& p = it->second;
        if (!p.node_name.empty() && p.phase == "Pending" && p.created &&
            now - *p.created >= options_.judge.pending_deadline / 2) {
          views[r].sandbox_events = EventsAbout(p.name, "FailedCreatePodSandBox");
        }
      } else if (pair.ranks[r].pod_seen) {
        vanished = true;  // preempted, evicted or deleted: not a verdict on anything
      } else if (views[r].job_created &&
                 now - *views[r].job_created >= options_.judge.pending_deadline / 2) {
        views[r].job_events = EventsAbout(pair.ranks[r].name, "FailedCreate");
      }
    }
    // A training pod that arrived on a planned node since: the canary yields, and judges nothing
    // (the node lacks its RDMA resource because a job holds it).
    if (vanished || busy.count(pair.a) || busy.count(pair.b)) {
      Log(fmt::format("canary: {} + {}: skipped ({})", pair.a, pair.b,
                      vanished ? "a rank's pod went away: preempted, evicted or deleted"
                               : "a job now uses the node"));
      metrics_->CountRun("skipped");
      pair.judged = true;
      judged.push_back(&pair);
      continue;
    }
    // Rank 1 joins once rank 0 listens on its pod IP.
    if (pair.ranks[1].name.empty() && views[0].pod && views[0].pod->phase == "Running" &&
        !views[0].pod->pod_ip.empty()) {
      if (Status st = CreateRank(pair, 1, views[0].pod->pod_ip, now); st.ok()) {
        views[1].job_created = pair.ranks[1].created;
      } else if (leader_()) {
        // Not the nodes' doing (RBAC, a quota on Jobs): the canary's setup, and the pair dropped.
        SetupProblem("cannot create rank 1's Job of " + pair.a + "+" + pair.b + ": " +
                     st.message());
        metrics_->CountRun("skipped");
        pair.judged = true;
        judged.push_back(&pair);
        continue;
      }
    }
    canary::Judgement j = canary::JudgePair(views[0], views[1], options_.judge, now);
    if (j.kind == Kind::kWait) {
      all_judged = false;
      if (j.pending_since && (!oldest_pending || *j.pending_since < *oldest_pending)) {
        oldest_pending = j.pending_since;
      }
      continue;
    }
    Finish(pair, j, now, results);
    judged.push_back(&pair);
  }
  metrics_->SetPending(oldest_pending ? std::chrono::duration<double>(now - *oldest_pending).count()
                                      : 0.0);
  if (judged.empty()) return;
  if (!results.empty()) {
    if (Status st = canary::RecordRound(history_, results, window_); !st.ok()) {
      Log("canary: results not recorded: " + st.message());
    }
  }
  if (all_judged) canary::PruneStale(history_, now, window_);
  // The results are saved before the judged Jobs go: a leader that dies in between leaves Jobs
  // the next one judges again, never results lost with their Jobs.
  if (!SaveState().ok()) return;
  for (PairRun* pair : judged) {
    for (const RankJob& r : pair->ranks) {
      if (!r.name.empty()) DeleteJob(r.name);
    }
  }
  if (all_judged) {
    Log("canary: round " + round_->id + " done");
    ++rounds_;
    round_.reset();
    events_cache_.clear();
  }
}

void CanaryRunner::Finish(PairRun& pair, const canary::Judgement& j, TimePoint now,
                          std::vector<canary::PairResult>& results) {
  pair.judged = true;
  std::string outcome = j.kind == Kind::kPass ? "pass" : j.check;
  metrics_->CountJudged(outcome);  // published with the coverage it changes, at Rebuild
  if (j.kind == Kind::kCanaryFault) {
    auto it = state_.faults.find(j.check);
    state_.faults[j.check] = {it == state_.faults.end() ? now : it->second.first,
                              j.message.substr(0, 1024)};
  } else {
    canary::PairResult r;
    r.a = pair.a;
    r.b = pair.b;
    r.block_a = pair.block_a;
    r.block_b = pair.block_b;
    r.at = now;
    r.cause = j.check;
    r.node = j.node;
    r.outcome = j.kind == Kind::kPass        ? canary::Outcome::kPass
                : j.kind == Kind::kNodeFault ? canary::Outcome::kNodeFault
                                             : canary::Outcome::kPairFault;
    results.push_back(std::move(r));
    if (j.kind == Kind::kPass) {
      state_.faults.clear();  // the canary itself works again
    } else {
      std::string key = j.kind == Kind::kNodeFault
                            ? j.check + "|" + j.node
                            : j.check + "|" + std::min(pair.a, pair.b) + "|" + std::max(pair.a, pair.b);
      state_.details[key] = {{"message", j.message.substr(0, 1024)},
                             {"evidence", j.evidence},
                             {"at", FormatRfc3339(now)}};
    }
  }
  Log(fmt::format("canary: {} + {}: {}{}", pair.a, pair.b, outcome,
                  j.message.empty() ? "" : ": " + j.message));
  if (j.kind != Kind::kPass && poster_ != nullptr && !pair.ranks[0].uid.empty()) {
    k8s::EventSpec e;
    e.ns = e.object_ns = options_.job.ns;
    e.api_version = "batch/v1";
    e.kind = "Job";
    e.name = pair.ranks[0].name;
    e.uid = pair.ranks[0].uid;
    e.type = "Warning";
    e.reason = "TocsinCanaryFailed";
    e.message = j.check + ": " + j.message;
    e.component = "tocsin-controller";
    e.instance = instance_;
    e.time = now;
    poster_->Enqueue(std::move(e));
  }
}

}  // namespace tocsin::controller
