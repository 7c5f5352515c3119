#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/conditions.h"
#include "agent/fabric.h"
#include "agent/kube_reporter.h"
#include "agent/metrics_server.h"
#include "agent/scheduler.h"
#include "k8s/kubeconfig.h"
#include "node/node.h"
#include "podresources/client.h"
#include "sys/env.h"

namespace tocsin::agent {

struct Schedule {
  std::chrono::milliseconds interval;
  std::chrono::milliseconds timeout;
};

// The task names and their default schedules (rdma, fabric, gpu, storage, storage-probe, nccl,
// pods).
std::map<std::string, Schedule> DefaultSchedules();

struct AgentOptions {
  std::string root = "/";
  std::string listen_host = "0.0.0.0";
  int listen_port = 9464;
  node::Options node;
  FabricOptions fabric;
  std::map<std::string, Schedule> schedules = DefaultSchedules();
  std::vector<std::string> probe_paths;
  double probe_max_fsync_ms = 0, probe_max_meta_ms = 0;
  std::string self_exe;  // for the child processes: storage probe, PodResources, API calls
  ConditionOptions conditions;
  std::chrono::milliseconds reconcile{10000};  // conditions evaluated (and written) this often
  std::chrono::milliseconds discover_timeout{10000};  // Discover's scan of the node, at most
  // The Env of Discover's scan, made on its thread (tests: one that hangs; null: NewRootedEnv).
  std::function<std::unique_ptr<Env>(const std::string& root)> discover_env;
  // Attribution of devices to pods (the pods task): off with --no-pod-resources.
  bool pod_resources = true;
  std::string pod_resources_socket = podresources::kDefaultSocket;
  // Kubernetes: off with --no-kube.
  bool kube = true;
  bool kube_in_process = false;  // ApiClient here, not a child per call (--kube-in-process)
  k8s::KubeconfigOptions kubeconfig;
  k8s::ClientOptions client;
  KubeOptions kube_options;  // node_name from --node-name or $NODE_NAME
};

// The per-node daemon as named steps: Discover (what this node has, which tasks to run, the
// Kubernetes node), StartHttp (/metrics, /healthz, /readyz), Loop (tasks on their schedules;
// conditions evaluated and written every `reconcile`, until a byte arrives on the stop fd) and
// Shutdown (bounded: stuck workers are abandoned, never joined).
class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  Status Discover();
  Status StartHttp();
  Status Loop(int stop_fd, int wake_fd);  // wake_fd: a byte runs every task now (SIGHUP)
  void Shutdown();

  int port() const { return server_ ? server_->port() : 0; }

  class Collector;  // renders tasks, checks, conditions and the agent itself on each scrape

 private:
  void Reconcile();

  AgentOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<KubeLoop> kube_;
  std::vector<TaskSpec> tasks_;
  std::shared_ptr<Collector> collector_;
  std::map<std::string, NodeCondition> conditions_;  // the last evaluation (Loop thread)
};

// Writes one timestamped line to stderr: "2026-11-30T01:02:03Z tocsin agent: <what>".
void Log(const std::string& what);

}  // namespace tocsin::agent
