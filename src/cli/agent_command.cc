#include "cli/agent_command.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "agent/agent.h"
#include "agent/kube_call.h"
#include "cli/daemon_flags.h"
#include "cli/node_flags.h"
#include "cli/number_flags.h"
#include "cli/report_flags.h"
#include "cli/yaml_config.h"
#include "podresources/client.h"
#include "sys/env.h"

namespace tocsin::cli {
namespace {

struct AgentFlags {
  std::string config;
  std::string root = "/";
  std::string listen = "0.0.0.0:9464";
  bool no_kube = false;
  bool no_pod_resources = false;
  std::string pod_resources_socket = podresources::kDefaultSocket;
  std::string pod_resources_call;  // internal: the pods task's child (podresources::ListInChild)
  int pod_resources_call_timeout_ms = 5000;
  bool kube_call = false;  // internal: one Kubernetes API call (agent::ChildKubeClient's child)
  int kube_call_attempts = 2;
  bool kube_in_process = false;
  std::string node_name, kubeconfig, context, event_namespace = "default";
  std::string request_timeout = "10s", reconcile = "10s", heartbeat = "60s";
  std::vector<std::string> intervals, timeouts;
  std::string condition_severity = "error";
  double stale_factor = 3;
  bool taint = false;
  std::string taint_severity = "critical", taint_key = "tocsin.io/degraded";
  std::vector<std::string> probe_paths;
  double probe_max_fsync_ms = 0, probe_max_meta_ms = 0;
  double fabric_idle_below = 1e6, tcp_busy_above = 100e6;
  std::string fabric_sustain = "60s";
  NodeFlags node;
};

int g_stop_pipe[2] = {-1, -1};
int g_wake_pipe[2] = {-1, -1};
extern "C" void OnStop(int) { (void)!write(g_stop_pipe[1], "x", 1); }
extern "C" void OnHangup(int) { (void)!write(g_wake_pipe[1], "x", 1); }

Status Duration(const std::string& flag, const std::string& text, std::chrono::milliseconds& out) {
  return ParseDurationFlag(flag, text, out);
}

// TASK=DURATION items of --interval / --timeout into the schedules.
Status ApplySchedule(const std::string& flag, const std::vector<std::string>& items, bool interval,
                     std::map<std::string, agent::Schedule>& schedules) {
  for (const auto& item : items) {
    auto eq = item.find('=');
    std::string task = item.substr(0, eq);
    if (eq == std::string::npos || !schedules.count(task)) {
      std::string known;
      for (const auto& [name, s] : schedules) known += (known.empty() ? "" : ", ") + name;
      return Status::InvalidArgument(flag + " \"" + item +
                                     "\": expected TASK=DURATION with TASK "
                                     "one of " +
                                     known);
    }
    std::chrono::milliseconds d;
    if (Status st = Duration(flag + " " + task, item.substr(eq + 1), d); !st.ok()) return st;
    (interval ? schedules[task].interval : schedules[task].timeout) = d;
  }
  return Status::Ok();
}

Result<agent::AgentOptions> BuildOptions(const CLI::App* cmd, const AgentFlags& f) {
  agent::AgentOptions o;
  if (Status st = CheckDirectory(f.root, "--root " + f.root); !st.ok()) {
    return Status::InvalidArgument(st.message());
  }
  o.root = f.root;
  if (Status s = ParseListen(f.listen, o.listen_host, o.listen_port); !s.ok()) return s;
  if (Status s = f.node.Apply(cmd, o.node); !s.ok()) return s;
  if (Status s = ApplySchedule("--interval", f.intervals, true, o.schedules); !s.ok()) return s;
  if (Status s = ApplySchedule("--timeout", f.timeouts, false, o.schedules); !s.ok()) return s;
  for (auto& [task, s] : o.schedules) {
    bool explicit_timeout = false;
    for (const auto& item : f.timeouts) explicit_timeout |= item.starts_with(task + "=");
    // A shorter interval alone brings the default timeout down with it.
    if (!explicit_timeout) s.timeout = std::min(s.timeout, s.interval);
    if (s.timeout > s.interval) {
      return Status::InvalidArgument(
          "task " + task + ": timeout " + std::to_string(s.timeout.count()) +
          " ms is longer than its interval " + std::to_string(s.interval.count()) + " ms");
    }
  }
  for (const auto& p : f.probe_paths) {
    if (p.empty() || p.front() != '/') {
      return Status::InvalidArgument("--probe-path \"" + p + "\": expected an absolute path");
    }
  }
  o.probe_paths = f.probe_paths;
  o.probe_max_fsync_ms = f.probe_max_fsync_ms;
  o.probe_max_meta_ms = f.probe_max_meta_ms;
  // The children run this very binary, not whatever the path holds now: a host install upgraded
  // in place keeps its running agent consistent with its children (protocol, flags).
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0) {
    return Status::IoError("/proc/self/exe: " + std::string(strerror(errno)));
  }
  o.self_exe = "/proc/self/exe";
  auto severity = ParseSeverity(f.condition_severity);
  if (!severity) return Status::InvalidArgument("--condition-severity: warning, error or critical");
  o.conditions.min_severity = *severity;
  if (!(f.stale_factor >= 1)) return Status::InvalidArgument("--stale-factor: must be >= 1");
  o.conditions.stale_factor = f.stale_factor;
  if (Status s = Duration("--reconcile", f.reconcile, o.reconcile); !s.ok()) return s;
  std::chrono::milliseconds d;
  if (Status s = Duration("--fabric-sustain", f.fabric_sustain, d); !s.ok()) return s;
  o.fabric.sustain = std::chrono::duration_cast<std::chrono::seconds>(d);
  o.fabric.rdma_idle_below_bps = f.fabric_idle_below;
  o.fabric.tcp_busy_above_bps = f.tcp_busy_above;
  o.kube = !f.no_kube;
  o.kube_in_process = f.kube_in_process;
  o.pod_resources = !f.no_pod_resources && !f.pod_resources_socket.empty();
  o.pod_resources_socket = f.pod_resources_socket;
  o.kubeconfig = {f.kubeconfig, f.context};
  if (Status s = Duration("--request-timeout", f.request_timeout, o.client.request_timeout);
      !s.ok()) {
    return s;
  }
  o.client.connect_timeout = std::min(o.client.connect_timeout, o.client.request_timeout);
  o.client.attempts = 2;  // the next reconcile retries anyway
  o.kube_options.node_name = f.node_name;
  o.kube_options.event_namespace = f.event_namespace;
  if (Status s = Duration("--heartbeat", f.heartbeat, d); !s.ok()) return s;
  o.kube_options.heartbeat = std::chrono::duration_cast<std::chrono::seconds>(d);
  o.kube_options.taint = f.taint;
  o.kube_options.taint_key = f.taint_key;
  auto taint_severity = ParseSeverity(f.taint_severity);
  if (!taint_severity) return Status::InvalidArgument("--taint-severity: error or critical");
  o.kube_options.taint_severity = *taint_severity;
  return o;
}

int RunAgent(CLI::App* cmd, const AgentFlags& f) {
  if (!f.pod_resources_call.empty()) {
    return podresources::RunCallChild(f.pod_resources_call,
                                      std::chrono::milliseconds(f.pod_resources_call_timeout_ms),
                                      stdout, stderr);
  }
  if (f.kube_call) {
    agent::KubeCallFlags k;
    k.kubeconfig = {f.kubeconfig, f.context};
    if (Status s = Duration("--request-timeout", f.request_timeout, k.client.request_timeout);
        !s.ok()) {
      return UsageError(s.message());
    }
    k.client.connect_timeout = std::min(k.client.connect_timeout, k.client.request_timeout);
    k.client.attempts = std::clamp(f.kube_call_attempts, 1, 10);
    return agent::RunKubeCallChild(k, stdin, stdout, stderr);
  }
  // One malloc arena: glibc gives each thread that allocates its own (the task loops and
  // workers, the HTTP server's), each keeping its peak; the agent allocates little and rarely.
  // Measured with writes and attribution on: 10.1 MiB against 10.7 (docs/BENCHMARKS.md).
  mallopt(M_ARENA_MAX, 1);
  // Step 1: load the configuration: the file's keys fill the flags not given.
  if (!f.config.empty()) {
    if (Status st = ApplyYamlConfig(cmd, f.config); !st.ok()) return UsageError(st.message());
  }
  auto options = BuildOptions(cmd, f);
  if (!options.ok()) return UsageError(options.status().message());
  if (pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0 ||
      pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return UsageError("pipe: " + std::string(strerror(errno)));
  }
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sa.sa_handler = OnHangup;
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  agent::Agent a(std::move(*options));
  // Step 2: discover the node and its tasks; step 3: serve HTTP.
  if (Status st = a.Discover(); !st.ok()) return UsageError(st.message());
  if (Status st = a.StartHttp(); !st.ok()) return UsageError(st.message());
  // Step 4: the loop, until SIGTERM or SIGINT.
  Status st = a.Loop(g_stop_pipe[0], g_wake_pipe[0]);
  // Step 5: shut down (bounded: a worker stuck on a hung mount is not waited for).
  agent::Log("shutting down");
  a.Shutdown();
  agent::Log("stopped");
  return st.ok() ? kExitOk : UsageError(st.message());
}

}  // namespace

Command AddAgentCommand(CLI::App& parent) {
  auto f = std::make_shared<AgentFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "agent",
      "The per-node daemon: repeats the node checks on their own schedules, serves Prometheus "
      "metrics, writes NodeConditions and Events");
  cmd->add_option("--config", f->config,
                  "YAML file whose keys are these flags' names; flags "
                  "given here win");
  cmd->add_option("--root", f->root,
                  "Read the host under this directory (a fixture tree, or "
                  "the host's / mounted in the pod)")
      ->capture_default_str();
  cmd->add_option("--listen", f->listen, "HOST:PORT of /metrics, /healthz, /readyz")
      ->capture_default_str();
  cmd->add_flag("--no-kube", f->no_kube, "A plain exporter: no NodeConditions, Events or taints");
  cmd->add_option("--pod-resources-socket", f->pod_resources_socket,
                  "The kubelet's PodResources socket: which pod holds which GPUs and RDMA "
                  "devices (the pods task; a path in the agent's own filesystem)")
      ->capture_default_str();
  cmd->add_flag("--no-pod-resources", f->no_pod_resources,
                "No attribution of devices to pods (the pods task is not run)");
  // Internal, hidden: the pods task's child process, which alone maps gRPC.
  cmd->add_option("--pod-resources-call", f->pod_resources_call)->group("");
  cmd->add_option("--pod-resources-call-timeout", f->pod_resources_call_timeout_ms)->group("");
  // Internal, hidden: one Kubernetes API call in a child process, which alone maps libcurl.
  cmd->add_flag("--kube-call", f->kube_call)->group("");
  cmd->add_option("--kube-call-attempts", f->kube_call_attempts)->group("");
  cmd->add_flag("--kube-in-process", f->kube_in_process,
                "Make the Kubernetes API calls in the agent's own process (libcurl and its TLS "
                "stack mapped for good) instead of a short-lived child process per call");
  cmd->add_option("--node-name", f->node_name, "This node's name (default: $NODE_NAME)");
  cmd->add_option("--kubeconfig", f->kubeconfig,
                  "Kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)");
  cmd->add_option("--context", f->context, "Kubeconfig context");
  cmd->add_option("--request-timeout", f->request_timeout, "Bound of one API request")
      ->capture_default_str();
  cmd->add_option("--event-namespace", f->event_namespace, "Namespace of the Events posted")
      ->capture_default_str();
  cmd->add_option("--interval", f->intervals,
                  "TASK=DURATION: how often a task runs (tasks: rdma 15s, fabric 10s, gpu 30s, "
                  "storage 30s, storage-probe 30s, nccl 30s)");
  cmd->add_option("--timeout", f->timeouts,
                  "TASK=DURATION: a run's deadline, after which its checks are unknown (rdma 5s, "
                  "fabric 5s, gpu 15s, storage 10s, storage-probe 20s, nccl 10s)");
  cmd->add_option("--reconcile", f->reconcile, "How often NodeConditions are evaluated")
      ->capture_default_str();
  cmd->add_option("--heartbeat", f->heartbeat, "Re-write unchanged conditions this often")
      ->capture_default_str();
  cmd->add_option("--condition-severity", f->condition_severity,
                  "Findings at or above this set a condition True")
      ->capture_default_str();
  cmd->add_option("--stale-factor", f->stale_factor,
                  "A task is stale after this many intervals (plus its timeout) without success")
      ->check(Number(1, 1000))
      ->capture_default_str();
  cmd->add_flag("--taint", f->taint,
                "Keep a NoSchedule taint on the node while a finding is at "
                "or above --taint-severity (off by default)");
  cmd->add_option("--taint-severity", f->taint_severity, "See --taint")->capture_default_str();
  cmd->add_option("--taint-key", f->taint_key, "See --taint")->capture_default_str();
  cmd->add_option("--probe-path", f->probe_paths,
                  "A directory on a shared filesystem to probe (4 KiB write, read, write+fsync, "
                  "create, stat, unlink; repeatable)");
  cmd->add_option("--probe-max-fsync-ms", f->probe_max_fsync_ms,
                  "A slower probe write+fsync is storage.latency.high")
      ->check(Number(0, 86400000));
  cmd->add_option("--probe-max-meta-ms", f->probe_max_meta_ms,
                  "A slower probe create/stat/unlink is storage.latency.high")
      ->check(Number(0, 86400000));
  cmd->add_option("--fabric-idle-below", f->fabric_idle_below,
                  "Bytes/s: RDMA traffic below this is idle (node.fabric.idle-while-tcp-busy)")
      ->check(Number(0, 1e15))
      ->capture_default_str();
  cmd->add_option("--tcp-busy-above", f->tcp_busy_above,
                  "Bytes/s: Ethernet traffic above this is busy")
      ->check(Number(0, 1e15))
      ->capture_default_str();
  cmd->add_option("--fabric-sustain", f->fabric_sustain,
                  "How long idle-while-busy must last before it is a finding")
      ->capture_default_str();
  f->node.AddTo(cmd);
  return {cmd, [cmd, f] { return RunAgent(cmd, *f); }};
}

}  // namespace tocsin::cli
