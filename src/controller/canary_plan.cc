// The canary runner's planning step: the fabric nodes with their topology blocks, which of them
// are idle, the coverage window, and a round's pairs with their rank-0 Jobs.
#include <algorithm>

#include <fmt/format.h>

#include "base/strings.h"
#include "controller/canary_metrics.h"
#include "controller/canary_runner.h"
#include "controller/log.h"

namespace tocsin::controller {

namespace {

std::string Base36(uint64_t v) {
  const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  do {
    out.insert(out.begin(), digits[v % 36]);
    v /= 36;
  } while (v);
  return out;
}

bool Terminal(const k8s::Pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

bool Accelerator(const std::string& res) {
  return res == "nvidia.com/gpu" || res == "amd.com/gpu" || res.starts_with("nvidia.com/mig-");
}

}  // namespace

void CanaryRunner::SetBlocks(Round& round, const std::vector<canary::NodeInfo>& all) {
  std::map<std::string, std::string> block;
  for (const auto& n : all) block[n.name] = n.block;
  for (PairRun& p : round.pairs) {
    p.block_a = block.count(p.a) ? block[p.a] : "";
    p.block_b = block.count(p.b) ? block[p.b] : "";
  }
}

std::set<std::string> CanaryRunner::BusyNodesIn(const k8s::Snapshot& s) const {
  std::set<std::string> busy;
  for (const auto& p : s.pods) {
    if (p.node_name.empty() || Terminal(p) || p.labels.count(canary::kCanaryLabel)) continue;
    for (const auto& c : p.containers) {
      for (const auto* m : {&c.requests, &c.limits}) {
        for (const auto& [res, qty] : *m) {
          if (Accelerator(res) || audit::IsRdmaResource(res, audit_)) busy.insert(p.node_name);
        }
      }
    }
  }
  return busy;
}

std::chrono::seconds CanaryRunner::Window(size_t fabric_nodes) const {
  if (options_.stale_after.count() > 0) return options_.stale_after;
  size_t per_round = std::max<size_t>(2, options_.max_nodes);
  size_t rounds = std::max<size_t>(1, (fabric_nodes + per_round - 1) / per_round);
  return std::chrono::seconds(3 * options_.interval.count() * static_cast<int64_t>(rounds));
}

std::vector<canary::NodeInfo> CanaryRunner::FabricNodes(
    std::vector<canary::NodeInfo>* eligible) const {
  std::vector<canary::NodeInfo> all;
  cache_->Read([&](const k8s::Snapshot& s) {
    std::set<std::string> busy;
    if (eligible != nullptr) busy = BusyNodesIn(s);
    // Fabric nodes by what the audit decides (labels, --fabric-nodes): never by what the state
    // ConfigMap says, and a node whose plugin died stays one (its labels stay).
    std::vector<const k8s::Node*> fabric;
    for (const auto& n : s.nodes) {
      if (audit::IsFabricNode(n, audit_)) fabric.push_back(&n);
    }
    std::string label = audit::TopologyLabel(fabric, options_.topology_label);
    for (const k8s::Node* n : fabric) {
      std::string block;
      if (!label.empty() && n->labels.count(label)) block = n->labels.at(label);
      all.push_back({n->name, block});
      const k8s::Condition* ready = n->FindCondition("Ready");
      if (eligible != nullptr && ready && ready->status == "True" && !n->unschedulable &&
          !busy.count(n->name)) {
        eligible->push_back({n->name, block});
      }
    }
  });
  return all;
}

void CanaryRunner::Plan(TimePoint now) {
  // The fabric nodes (by label, or seen as such before: a node whose plugin died stays one), their
  // blocks, and those idle now.
  std::vector<canary::NodeInfo> eligible;
  std::vector<canary::NodeInfo> all = FabricNodes(&eligible);
  for (const auto& n : all) state_.first_seen.emplace(n.name, now);
  std::erase_if(state_.first_seen, [&](const auto& kv) {  // nodes gone from the cluster
    return std::none_of(all.begin(), all.end(), [&](const auto& n) { return n.name == kv.first; });
  });
  window_ = Window(all.size());
  state_.last_round_start = now;  // planned or not, the next try is an interval away
  if (Status st = ReadReference(); !st.ok() && !reference_read_) {
    SetupProblem(st.message());
    (void)SaveState();
    return;  // never run canaries without the production environment they were asked to copy
  }
  // A resource no node advertises at all (not even at 0) is a name no device plugin serves: a
  // typo, or no plugin deployed. One setup finding, never every node blamed for it.
  std::vector<std::string> unknown;
  cache_->Read([&](const k8s::Snapshot& snap) {
    for (const auto& resource : options_.job.resources) {
      const std::string& name = resource.first;  // (clang 14 captures no structured binding)
      bool any = std::any_of(snap.nodes.begin(), snap.nodes.end(),
                             [&](const k8s::Node& n) { return n.allocatable.count(name) > 0; });
      if (!any) unknown.push_back(name);
    }
  });
  if (!unknown.empty()) {
    SetupProblem("no node advertises " + Join(unknown, ", ") +
                 " (--canary-resource): a resource name no device plugin serves, or no plugin "
                 "deployed");
    (void)SaveState();
    return;
  }
  if (setup_problem_.starts_with("no node advertises")) SetupProblem("");
  canary::PlanOptions po{.max_nodes = options_.max_nodes,
                         .seed = options_.seed + rounds_,
                         .now = now,
                         .window = window_};
  std::vector<canary::PlannedPair> pairs = canary::Plan(eligible, all, history_, po);
  metrics_->SetFabric(all.size(), eligible.size());
  if (pairs.empty()) {
    Log(fmt::format("canary: no round: {} fabric nodes, {} idle", all.size(), eligible.size()));
    metrics_->CountRun("skipped");
    (void)SaveState();
    return;
  }
  Round round;
  round.id = Base36(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()));
  round.started = now;
  for (size_t i = 0; i < pairs.size(); ++i) {
    PairRun p;
    p.index = static_cast<int>(i);
    p.a = pairs[i].a;
    p.b = pairs[i].b;
    p.why = pairs[i].why;
    round.pairs.push_back(std::move(p));
  }
  SetBlocks(round, all);
  round_ = std::move(round);
  std::vector<std::string> names;
  for (PairRun& p : round_->pairs) {
    if (Status st = CreateRank(p, 0, "", now); !st.ok()) {
      if (!leader_()) {  // the new leader carries on what was created
        round_.reset();
        return;
      }
      SetupProblem("cannot create the canary Jobs in namespace " + options_.job.ns + ": " +
                   st.message());
      for (PairRun& q : round_->pairs) {
        if (!q.ranks[0].name.empty()) DeleteJob(q.ranks[0].name);
      }
      round_.reset();
      (void)SaveState();
      return;
    }
    names.push_back(p.a + "+" + p.b);
  }
  SetupProblem("");
  Log(fmt::format("canary: round {}: {} pairs ({})", round_->id, round_->pairs.size(),
                  Join(names, ", ")));
  (void)SaveState();
}

}  // namespace tocsin::controller
