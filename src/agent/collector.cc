#include "agent/collector.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "agent/families.h"
#include "tocsin/version.h"

namespace tocsin::agent {

using prometheus::MetricType;

SelfUsage ReadSelfUsage() {
  SelfUsage u;
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (statm >> size >> resident) {
    u.resident_bytes = static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
  }
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    u.cpu_seconds =
        ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  }
  return u;
}

Agent::Collector::Collector(const Scheduler* scheduler, std::string node_name, TimePoint started)
    : scheduler_(scheduler), node_name_(std::move(node_name)), started_(started) {}

void Agent::Collector::SetConditions(const std::vector<NodeCondition>& conditions,
                                     const KubeCounters& kube) {
  std::lock_guard<std::mutex> lock(mu_);
  conditions_ = conditions;
  kube_ = kube;
}

std::vector<prometheus::MetricFamily> Agent::Collector::Collect() const {
  std::vector<TaskState> tasks = scheduler_->States();
  Families fam;
  // The tasks' own families; several tasks (one probe per path) may share a family name.
  for (const auto& t : tasks) {
    if (t.outcome != Outcome::kOk || !t.output) continue;
    for (const auto& f : t.output->families) {
      fam.Family(f.name, f.help, f.type);
      auto& mine = fam.families();
      for (auto& existing : mine) {
        if (existing.name == f.name) {
          existing.metric.insert(existing.metric.end(), f.metric.begin(), f.metric.end());
          break;
        }
      }
    }
  }
  for (const auto& cs : EvaluateChecks(tasks)) {
    Labels id = {{"check", cs.check}, {"task", cs.task}};
    fam.Family("tocsin_check_status",
               "Per check: 1 ok, 0 failing, -1 unknown (not run, timed out "
               "or its input could not be read).",
               MetricType::Gauge)
        .Add(id, cs.value);
    if (cs.last_run) {
      fam.Family("tocsin_check_last_run_timestamp_seconds",
                 "Unix time the last run of the check's task started.", MetricType::Gauge)
          .Add(id, std::chrono::duration<double>(cs.last_run->time_since_epoch()).count());
      fam.Family("tocsin_check_duration_seconds", "Duration of the last run of the check's task.",
                 MetricType::Gauge)
          .Add(id, cs.duration_s);
    }
  }
  for (const auto& t : tasks) {
    struct {
      const char* outcome;
      uint64_t n;
    } counts[] = {{"ok", t.runs - t.errors - t.timeouts - t.stuck},
                  {"error", t.errors},
                  {"timeout", t.timeouts},
                  {"stuck", t.stuck}};
    for (const auto& c : counts) {
      fam.Family("tocsin_task_runs_total",
                 "Runs of each agent task by outcome (stuck: skipped, the previous run had not "
                 "returned).",
                 MetricType::Counter)
          .Add({{"task", t.name}, {"outcome", c.outcome}}, static_cast<double>(c.n));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& c : conditions_) {
      for (const char* status : {"True", "False", "Unknown"}) {
        fam.Family("tocsin_node_condition",
                   "The agent's NodeConditions: 1 for the current status of each type (True "
                   "means a problem).",
                   MetricType::Gauge)
            .Add({{"condition", c.type}, {"status", status}}, c.status == status ? 1 : 0);
      }
    }
    fam.Family("tocsin_agent_kube_connected",
               "1 when the agent has read its Node from the API server (0 with --no-kube).",
               MetricType::Gauge)
        .Add({}, kube_.connected ? 1 : 0);
    fam.Family("tocsin_agent_condition_patches_total", "Patches of nodes/<name>/status written.",
               MetricType::Counter)
        .Add({}, static_cast<double>(kube_.patches));
    fam.Family("tocsin_agent_events_total", "Events posted on condition transitions.",
               MetricType::Counter)
        .Add({}, static_cast<double>(kube_.events));
    fam.Family("tocsin_agent_kube_errors_total", "Kubernetes API writes that failed.",
               MetricType::Counter)
        .Add({}, static_cast<double>(kube_.errors));
    fam.Family("tocsin_agent_fabric_facts_published",
               "1 when the Node's annotation tocsin.io/fabric holds this agent's current fabric "
               "facts, else 0 (not yet written, a failed patch, or dropped by the API server).",
               MetricType::Gauge)
        .Add({}, kube_.facts_published ? 1 : 0);
    fam.Family("tocsin_agent_fabric_facts_patches_total",
               "Patches of nodes/<name>/status that carried the fabric facts.", MetricType::Counter)
        .Add({}, static_cast<double>(kube_.facts_patches));
    fam.Family("tocsin_agent_fabric_facts_dropped_total",
               "Fabric facts patches the API server answered without the annotation.",
               MetricType::Counter)
        .Add({}, static_cast<double>(kube_.facts_dropped));
    fam.Family("tocsin_agent_kube_call_failures_total",
               "Kubernetes API calls left without an answer: the child process that makes each "
               "call could not start, was killed at its deadline, failed, or answered garbage.",
               MetricType::Counter)
        .Add({}, static_cast<double>(kube_.call_failures));
  }
  SelfUsage u = ReadSelfUsage();
  fam.Family("tocsin_agent_resident_memory_bytes", "Resident set size of the agent.",
             MetricType::Gauge)
      .Add({}, u.resident_bytes);
  fam.Family("tocsin_agent_cpu_seconds_total", "User and system CPU time of the agent.",
             MetricType::Counter)
      .Add({}, u.cpu_seconds);
  fam.Family("tocsin_agent_start_time_seconds", "Unix time the agent started.", MetricType::Gauge)
      .Add({}, std::chrono::duration<double>(started_.time_since_epoch()).count());
  fam.Family("tocsin_agent_info", "Constant 1, with the agent's version and node name.",
             MetricType::Gauge)
      .Add({{"version", kVersion}, {"node", node_name_}}, 1);
  return fam.Take();
}

}  // namespace tocsin::agent
