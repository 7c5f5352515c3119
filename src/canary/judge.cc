#include "canary/judge.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"
#include "bench/catalog.h"
#include "bench/verdict.h"
#include "canary/catalog.h"
#include "canary/scheduler_message.h"

namespace tocsin::canary {

namespace {

using Kind = Judgement::Kind;
using nlohmann::json;

constexpr size_t kMaxQuoted = 300;

bool ImageReason(const std::string& r) {
  return r == "ErrImagePull" || r == "ImagePullBackOff" || r == "InvalidImageName" ||
         r == "ErrImageNeverPull" || r == "RegistryUnavailable";
}

// Reasons the kubelet gives a pod it refused at admission (pkg/kubelet/lifecycle, the device
// manager's UnexpectedAdmissionError, OutOf<resource>, NodeAffinity, NodeSelectorMismatching).
bool NodeAdmissionReason(const std::string& r) {
  return r == "UnexpectedAdmissionError" || r.starts_with("OutOf") || r == "NodeAffinity" ||
         r == "NodeSelectorMismatching" || r == "UnexpectedAdmission" || r == "Evicted" ||
         r == "NodeLost";
}

Judgement Fault(Kind kind, std::string check, std::string node, std::string message,
                json evidence = json::object()) {
  Judgement j;
  j.kind = kind;
  j.check = std::move(check);
  j.node = std::move(node);
  j.message = std::move(message);
  j.evidence = std::move(evidence);
  return j;
}

const k8s::ContainerStatus* Bench(const k8s::Pod& pod) {
  for (const auto& st : pod.statuses) {
    if (st.name == kBenchContainer) return &st;
  }
  return nullptr;
}

std::string Secs(std::chrono::nanoseconds d) {
  return fmt::format("{}s", std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

// The canary's resources the planned node advertises none of (absent, or an allocatable of 0):
// no amount of waiting schedules the rank there while its device plugin serves nothing. A node
// younger than the pending deadline is given that long (its plugin may still be registering).
std::vector<std::string> NotAdvertised(const RankView& r, const JudgeOptions& o, TimePoint now) {
  std::vector<std::string> out;
  if (!r.node || !r.node->created || now - *r.node->created < o.pending_deadline) return out;
  for (const std::string& res : o.resources) {
    auto it = r.node->allocatable.find(res);
    if (it == r.node->allocatable.end() || it->second == "0") out.push_back(res);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& CheckIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& c : Catalog().checks) out.push_back(c.id);
    return out;
  }();
  return ids;
}

Judgement JudgeRank(const RankView& r, const JudgeOptions& o, TimePoint now, bool force) {
  const std::string& node = r.planned_node;
  if (!r.job_created) return {};  // not created yet: the runner creates rank 1 after rank 0 runs
  if (r.pod == nullptr) {
    // The Job exists and made no pod: a quota or a queue (Kueue suspends the Job) holds it.
    Judgement j;
    j.pending_since = r.job_created;
    if (force || now - *r.job_created >= o.pending_deadline) {
      std::string why = r.job_events.empty()
                            ? "a queue such as Kueue did not admit it, or a ResourceQuota, "
                              "LimitRange or Pod Security level refused its pod"
                            : "FailedCreate: " + Quote(r.job_events.back(), kMaxQuoted);
      return Fault(Kind::kCanaryFault, kAdmission, "",
                   fmt::format("rank {}'s Job made no pod in {}: {}", r.rank,
                               Secs(now - *r.job_created), why),
                   {{"rank", r.rank}, {"node", node}, {"events", r.job_events}});
    }
    return j;
  }
  const k8s::Pod& pod = *r.pod;
  TimePoint created = pod.created.value_or(*r.job_created);
  bool overdue = force || now - created >= o.pending_deadline;
  if (!pod.node_name.empty() && pod.node_name != node) {
    return Fault(Kind::kCanaryFault, kPlacement, "",
                 fmt::format("rank {} was planned on {} and runs on {} (a mutating webhook or a "
                             "scheduler changed its affinity)",
                             r.rank, node, pod.node_name),
                 {{"rank", r.rank}, {"planned", node}, {"node", pod.node_name}});
  }
  if (pod.phase == "Failed" && NodeAdmissionReason(pod.reason)) {
    return Fault(Kind::kNodeFault, kNodeAdmission, node,
                 fmt::format("the kubelet on {} refused rank {}: {}: {}", node, r.rank, pod.reason,
                             Quote(pod.message, kMaxQuoted)),
                 {{"reason", pod.reason}, {"message", EscapeControl(pod.message.substr(0, 1024))}});
  }
  const k8s::Condition* scheduled = pod.FindCondition("PodScheduled");
  if (pod.node_name.empty()) {
    Judgement j;
    j.pending_since = created;
    std::string text = scheduled ? scheduled->message : "";
    SchedulerMessage m = ParseSchedulerMessage(text);
    // The scheduler refused it for a resource its node does not advertise at all: judged now,
    // not at the deadline (which is for fabric that is advertised but held by others).
    std::vector<std::string> absent;
    for (const std::string& res : NotAdvertised(r, o, now)) {
      bool refused = std::any_of(m.causes.begin(), m.causes.end(),
                                 [&](const auto& c) { return c.first == "Insufficient " + res; });
      if (refused) absent.push_back(res);
    }
    if (!overdue && absent.empty()) return j;
    json causes = json::object();
    for (const auto& [cause, n] : m.causes) causes[cause] = n;
    json ev = {{"rank", r.rank}, {"pending_seconds", std::chrono::duration_cast<std::chrono::seconds>(now - created).count()}};
    if (m.parsed) {
      ev["nodes_available"] = m.available;
      ev["nodes"] = m.total;
      ev["causes"] = causes;
    }
    if (scheduled && !scheduled->reason.empty()) ev["reason"] = scheduled->reason;
    if (!absent.empty()) {
      json allocatable = json::object();
      for (const std::string& res : absent) {
        auto it = r.node->allocatable.find(res);
        allocatable[res] = it == r.node->allocatable.end() ? "absent" : it->second;
      }
      ev["node_allocatable"] = std::move(allocatable);
    }
    // The node is to blame only when it lacks what the canary asks of the fabric; a taint the
    // canary does not tolerate, CPU or memory taken by others, is the canary's own setup.
    bool fabric = false;
    for (const auto& [cause, n] : m.causes) {
      for (const std::string& res : o.resources) fabric |= cause == "Insufficient " + res;
    }
    if (!fabric) {
      return Fault(Kind::kCanaryFault, kUnschedulable, "",
                   fmt::format("rank {} for {} has been Pending for {} for a reason that is not "
                               "the fabric (tolerations: --canary-env-from; requests: the nodes' "
                               "free CPU and memory): {}",
                               r.rank, node, Secs(now - created),
                               text.empty() ? "the scheduler has said nothing (is it running?)"
                                            : EscapeControl(text.substr(0, 1024))),
                   std::move(ev));
    }
    std::string why = text.empty() ? "the scheduler has said nothing (is it running?)"
                                   : EscapeControl(text.substr(0, 1024));
    if (!absent.empty()) {
      return Fault(Kind::kNodeFault, kUnschedulable, node,
                   fmt::format("rank {} cannot be scheduled: {} advertises no {} (allocatable 0 "
                               "or absent: its device plugin serves nothing): {}",
                               r.rank, node, Join(absent, ", "), why),
                   std::move(ev));
    }
    return Fault(Kind::kNodeFault, kUnschedulable, node,
                 fmt::format("rank {} for {} has been Pending for {}: {}", r.rank, node,
                             Secs(now - created), why),
                 std::move(ev));
  }
  const k8s::ContainerStatus* st = Bench(pod);
  if (st && ImageReason(st->waiting_reason) && overdue) {
    return Fault(Kind::kCanaryFault, kImage, "",
                 fmt::format("rank {} on {} cannot pull its image {} (--canary-image): {}: {}",
                             r.rank, node, Quote(st->image, 200), st->waiting_reason,
                             Quote(st->waiting_message, kMaxQuoted)),
                 {{"reason", st->waiting_reason}, {"image", st->image}});
  }
  bool started = pod.phase == "Running" || pod.phase == "Succeeded" || pod.phase == "Failed" ||
                 (st && st->exit_code);
  if (!started) {
    Judgement j;
    j.pending_since = created;
    if (!overdue) return j;
    json ev = {{"rank", r.rank}, {"events", r.sandbox_events}};
    if (st) ev["waiting"] = st->waiting_reason;
    std::string why = r.sandbox_events.empty()
                          ? fmt::format("still {} with no sandbox error reported",
                                        st && !st->waiting_reason.empty() ? st->waiting_reason
                                                                          : pod.phase)
                          : "FailedCreatePodSandBox: " + Quote(r.sandbox_events.back(), kMaxQuoted);
    // Multus cannot find the NetworkAttachmentDefinition the canary names: the same on every
    // node, the canary's setup (--canary-network), not this node's.
    bool missing_network = false;
    for (const std::string& e : r.sandbox_events) {
      missing_network |= e.find("cannot find a network-attachment-definition") != std::string::npos ||
                         (e.find("network-attachment-definitions") != std::string::npos &&
                          e.find("not found") != std::string::npos);
    }
    return Fault(missing_network ? Kind::kCanaryFault : Kind::kNodeFault, kSandbox,
                 missing_network ? "" : node,
                 fmt::format("rank {} on {} has not started in {}: {}", r.rank, node,
                             Secs(now - created), why),
                 std::move(ev));
  }
  if (st && st->exit_code) return Fault(Kind::kPass, "", node, "");  // ended: the pair judges
  if (pod.phase == "Failed") {  // killed before its container ran (activeDeadlineSeconds, ...)
    return Fault(
        Kind::kPairFault, kRankFailed, "",
        fmt::format("rank {} on {} failed: {}: {}", r.rank, node,
                    pod.reason.empty() ? "no reason" : pod.reason, Quote(pod.message, kMaxQuoted)),
        {{"rank", r.rank}, {"reason", pod.reason}});
  }
  return {};  // running
}

namespace {

struct Ended {
  const k8s::ContainerStatus* status = nullptr;
  std::optional<bench::Verdict> verdict;
  std::string error;
};

Ended Read(const RankView& r) {
  Ended e;
  if (r.pod == nullptr || (e.status = Bench(*r.pod)) == nullptr || !e.status->exit_code) return e;
  if (e.status->termination_message.empty()) {
    e.error = "no termination message";
    return e;
  }
  auto v = bench::DecodeVerdict(e.status->termination_message);
  if (v.ok()) {
    e.verdict = std::move(*v);
  } else {
    e.error = v.status().message();
  }
  return e;
}

json Bandwidths(const bench::Verdict& v) {
  json out = json::object();
  for (const auto& t : v.tests) out[t.test] = t.busbw;
  return out;
}

const bench::VerdictFinding* FindCheck(const std::optional<bench::Verdict>& v,
                                       const std::string& check) {
  if (!v) return nullptr;
  for (const auto& f : v->findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

}  // namespace

Judgement JudgePair(const RankView& r0, const RankView& r1, const JudgeOptions& o, TimePoint now) {
  Judgement s0 = JudgeRank(r0, o, now);
  if (s0.kind != Kind::kWait && s0.kind != Kind::kPass) return s0;
  Judgement s1 = JudgeRank(r1, o, now);
  if (s1.kind != Kind::kWait && s1.kind != Kind::kPass) return s1;
  if (s0.kind != Kind::kPass) {
    Judgement j;
    j.pending_since = s0.pending_since ? s0.pending_since : s1.pending_since;
    return j;
  }
  Ended e0 = Read(r0), e1 = Read(r1);
  if (s1.kind != Kind::kPass && r1.job_created && e0.status->exit_code != 0 &&
      now - *r1.job_created >= o.bench_timeout * 4 / 5) {
    // Rank 0 gave up waiting (rank 1 is about as old as the wait): when rank 1 never started,
    // its stage is the cause, not rank 0's "did not join".
    Judgement stuck = JudgeRank(r1, o, now, /*overdue=*/true);
    if (stuck.kind != Kind::kWait && stuck.kind != Kind::kPass) return stuck;
  }
  if (s1.kind != Kind::kPass && r1.job_created && e0.status->exit_code == 0) {
    // Rank 0 ended well; rank 1 may still be on its way out. (Rank 0 failing, or ending before
    // rank 1 was even created, decides at once: rank 1 can only time out.)
    std::optional<TimePoint> finished = e0.status->finished;
    if (!finished || now - *finished < o.finish_grace) {
      Judgement j;
      j.pending_since = s1.pending_since;
      return j;
    }
  }
  std::string pair = r0.planned_node + " and " + r1.planned_node;
  const std::optional<bench::Verdict>& v = e0.verdict ? e0.verdict : e1.verdict;
  if (!v) {
    return Fault(Kind::kPairFault, kRankFailed, "",
                 fmt::format("the canary between {} ended without a verdict: rank 0 exited {} "
                             "({}){}",
                             pair, e0.status->exit_code.value_or(-1), e0.error,
                             e0.status->termination_message.empty()
                                 ? ""
                                 : ": " + Quote(e0.status->termination_message, kMaxQuoted)),
                 {{"exit", e0.status->exit_code.value_or(-1)}, {"error", e0.error}});
  }
  json ev = {{"transport", v->transport}, {"provider", v->provider},
             {"busbw_gbps", Bandwidths(*v)}, {"exit", v->exit}};
  ev["rdma"] = v->rdma ? json(*v->rdma) : json(nullptr);
  // Where the ranks say they ran.
  for (const auto& rank : v->ranks) {
    const RankView& planned = rank.rank == 0 ? r0 : r1;
    if (rank.rank > 1 || rank.node.empty() || rank.node == planned.planned_node) continue;
    return Fault(Kind::kCanaryFault, kPlacement, "",
                 fmt::format("rank {} was planned on {} and reports node {}", rank.rank,
                             planned.planned_node, Quote(rank.node, 253)),
                 ev);
  }
  const bench::VerdictFinding* not_rdma = FindCheck(e0.verdict, bench::kNetTransportNotRdma);
  if (!not_rdma) not_rdma = FindCheck(e1.verdict, bench::kNetTransportNotRdma);
  // Not RDMA: said so, or a path known to be sockets, or a run that ended well on a path it could
  // not determine (a run that failed before its path was up says nothing of the path).
  bool undetermined_ok = !v->rdma && v->exit == 0;
  if (o.expect == "rdma" && (not_rdma || (v->rdma && !*v->rdma) || undetermined_ok)) {
    std::string bw;
    for (const auto& t : v->tests) bw += fmt::format(", {} {:.2f} GB/s", t.test, t.busbw);
    return Fault(Kind::kPairFault, kTransportNotRdma, "",
                 fmt::format("the canary between {} ran over {}{} instead of RDMA{}{}", pair,
                             v->transport.empty() ? "an undetermined path" : v->transport,
                             v->provider.empty() ? "" : " (provider " + v->provider + ")",
                             bw.empty() ? "" : " although it measured" + bw.substr(1),
                             not_rdma ? ": " + Quote(not_rdma->message, kMaxQuoted) : ""),
                 ev);
  }
  const bench::VerdictFinding* low = FindCheck(e0.verdict, bench::kNetBusbwLow);
  for (const auto& t : v->tests) {
    if (!low && o.min_busbw > 0 && t.busbw < o.min_busbw) {
      return Fault(Kind::kPairFault, kBusbwLow, "",
                   fmt::format("the canary between {}: {} bus bandwidth {:.2f} GB/s is below the "
                               "floor {:.2f} GB/s",
                               pair, t.test, t.busbw, o.min_busbw),
                   ev);
    }
  }
  if (low) {
    return Fault(Kind::kPairFault, kBusbwLow, "",
                 fmt::format("the canary between {}: {}", pair, Quote(low->message, kMaxQuoted)),
                 ev);
  }
  int exit0 = e0.status->exit_code.value_or(-1);
  int exit1 = e1.status && e1.status->exit_code ? static_cast<int>(*e1.status->exit_code) : -1;
  if (exit0 != 0 || v->exit != 0 || (e1.status && exit1 != 0)) {
    std::string why;
    for (const auto& f : v->findings) {
      if (f.severity >= Severity::kError) {
        why = f.check + ": " + Quote(f.message, kMaxQuoted);
        break;
      }
    }
    ev["exit1"] = exit1;
    return Fault(Kind::kPairFault, kRankFailed, "",
                 fmt::format("the canary between {} failed (rank 0 exit {}, rank 1 exit {}){}",
                             pair, exit0, exit1, why.empty() ? "" : ": " + why),
                 ev);
  }
  Judgement pass;
  pass.kind = Kind::kPass;
  pass.evidence = std::move(ev);
  return pass;
}

}  // namespace tocsin::canary
