#include "agent/agent.h"

#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "agent/collector.h"
#include "agent/nccl_task.h"
#include "agent/node_tasks.h"
#include "agent/pods_task.h"
#include "agent/probe_task.h"
#include "gpu/inventory.h"
#include "rdma/inventory.h"
#include "storage/inventory.h"
#include "sys/bounded_call.h"

namespace tocsin::agent {

using std::chrono::milliseconds;
using std::chrono::seconds;

void Log(const std::string& what) {
  std::cerr << FormatRfc3339(Clock::now()) << " tocsin agent: " << what << std::endl;
}

std::map<std::string, Schedule> DefaultSchedules() {
  return {{"rdma", {seconds(15), seconds(5)}},           {"fabric", {seconds(10), seconds(5)}},
          {"gpu", {seconds(30), seconds(15)}},           {"storage", {seconds(30), seconds(10)}},
          {"storage-probe", {seconds(30), seconds(20)}}, {"nccl", {seconds(30), seconds(10)}},
          {"pods", {seconds(30), seconds(10)}}};
}

Agent::Agent(AgentOptions options)
    : options_(std::move(options)), registry_(std::make_shared<prometheus::Registry>()) {}

Agent::~Agent() { Shutdown(); }

Status Agent::Discover() {
  // What this node has (sysfs and the mount table only), for the log. A wedged driver's sysfs
  // file can still block a read in the kernel: like a task, the scan has a deadline, and a
  // scan that outlives it is abandoned (the tasks' own deadlines then report it).
  auto found = sys::BoundedCall(options_.discover_timeout, [root = options_.root,
                                                            make_env = options_.discover_env] {
    auto env = make_env ? make_env(root) : NewRootedEnv(root);
    rdma::Scan rdma = rdma::ScanDevices(*env);
    gpu::Scan gpus = gpu::ScanGpus(*env);
    storage::Scan storage = storage::ScanStorage(*env);
    size_t ports = 0, shared = 0;
    for (const auto& d : rdma.devices) ports += d.ports.size();
    for (const auto& m : storage.mounts.mounts) shared += storage::IsSharedMount(m);
    return std::to_string(rdma.devices.size()) + " RDMA devices (" + std::to_string(ports) +
           " ports), " + std::to_string(gpus.gpus.size()) + " GPUs, " + std::to_string(shared) +
           " shared mounts, " + std::to_string(storage.lustre_devices.size()) + " Lustre imports";
  });
  if (found) {
    Log("discover: root " + options_.root + ": " + *found);
  } else {
    Log("discover: root " + options_.root + ": no answer within " +
        std::to_string(options_.discover_timeout.count()) +
        " ms (a hung driver or sysfs file?); serving anyway, the tasks will say what is stuck");
  }

  auto schedule = [&](const std::string& name) { return options_.schedules.at(name); };
  auto add = [&](TaskSpec t, const std::string& kind) {
    Schedule s = schedule(kind);
    t.interval = s.interval;
    t.timeout = s.timeout;
    tasks_.push_back(std::move(t));
  };
  node::Options node = options_.node;
  // NVML must answer inside the gpu task's own deadline.
  node.nvml_timeout = std::min(node.nvml_timeout, schedule("gpu").timeout / 2);
  add(RdmaTask(options_.root, node), "rdma");
  add(FabricTask(options_.root, options_.fabric), "fabric");
  add(GpuTask(options_.root, node), "gpu");
  add(StorageTask(options_.root, node), "storage");
  add(NcclLogTask(options_.root), "nccl");
  for (const auto& path : options_.probe_paths) {
    ProbeTaskOptions p;
    p.path = path;
    p.self_exe = options_.self_exe;
    p.max_fsync_ms = options_.probe_max_fsync_ms;
    p.max_meta_ms = options_.probe_max_meta_ms;
    p.interval = schedule("storage-probe").interval;
    p.timeout = schedule("storage-probe").timeout;
    tasks_.push_back(StorageProbeTask(p, registry_));
  }
  std::function<Result<std::vector<k8s::Pod>>()> list_pods;
  if (options_.kube) {
    auto& node_name = options_.kube_options.node_name;
    if (node_name.empty()) {
      const char* env_name = std::getenv("NODE_NAME");
      if (env_name == nullptr || *env_name == '\0') {
        return Status::InvalidArgument(
            "no node name: set --node-name or NODE_NAME (the downward API's spec.nodeName), or "
            "run with --no-kube");
      }
      node_name = env_name;
    }
    auto access = k8s::ResolveAccess(options_.kubeconfig, k8s::AccessEnvironment());
    if (!access.ok()) return access.status();
    // Each call in a child process (the default: the agent never maps libcurl), or through an
    // ApiClient of this process (--kube-in-process).
    auto failures = std::make_shared<std::atomic<uint64_t>>(0);  // one count for every client
    auto make_client = [&]() -> Result<std::unique_ptr<KubeClient>> {
      if (!options_.kube_in_process) {
        return ChildKubeClient(
            {options_.self_exe, options_.kubeconfig, options_.client, {}, failures});
      }
      TOCSIN_ASSIGN_OR_RETURN(std::unique_ptr<k8s::ApiClient> c,
                              k8s::ApiClient::Create(*access, options_.client));
      return InProcessKubeClient(std::move(c));
    };
    auto client = make_client();
    if (!client.ok()) return client.status();
    kube_ = std::make_unique<KubeLoop>(
        std::make_unique<KubeReporter>(std::move(*client), options_.kube_options),
        options_.conditions, Log);
    Log("kubernetes: node " + node_name + " via " + access->origin +
        (options_.kube_in_process ? "" : " (each call in a child process)"));
    if (options_.pod_resources) {
      // The pods' labels (their jobs) for the pods task: its own client (the reporter's is the
      // Kubernetes thread's), the right the agent already has (list pods, this node's only).
      auto pods_client = make_client();
      if (!pods_client.ok()) return pods_client.status();
      std::shared_ptr<KubeClient> shared = std::move(*pods_client);
      list_pods = [shared, node_name]() -> Result<std::vector<k8s::Pod>> {
        k8s::Snapshot snap;
        TOCSIN_RETURN_IF_ERROR(
            shared->List("/api/v1/pods?fieldSelector=spec.nodeName%3D" + node_name, "Pod", snap));
        return std::move(snap.pods);
      };
    }
  }
  if (options_.pod_resources) {
    PodsTaskOptions p;
    p.socket_path = options_.pod_resources_socket;
    p.call_timeout = schedule("pods").timeout / 2;
    p.self_exe = options_.self_exe;
    p.node_name = options_.kube_options.node_name;
    p.list_pods = std::move(list_pods);
    add(PodsTask(options_.root, std::move(p)), "pods");
  }
  for (const auto& t : tasks_) {
    Log("task " + t.name + ": every " + std::to_string(t.interval.count()) + " ms, timeout " +
        std::to_string(t.timeout.count()) + " ms");
  }

  return Status::Ok();
}

Status Agent::StartHttp() {
  scheduler_ = std::make_unique<Scheduler>(tasks_, [] { return Clock::now(); });
  collector_ =
      std::make_shared<Collector>(scheduler_.get(), options_.kube_options.node_name, Clock::now());
  server_ = std::make_unique<MetricsServer>(registry_);
  server_->AddCollectable(collector_);
  Status st = server_->Start(options_.listen_host, options_.listen_port);
  if (!st.ok()) return st;
  Log("serving /metrics, /healthz, /readyz on " + options_.listen_host + ":" +
      std::to_string(server_->port()));
  return Status::Ok();
}

void Agent::Reconcile() {
  std::vector<TaskState> states = scheduler_->States();
  TimePoint now = Clock::now();
  // The agent's own view (metrics, log); the Kubernetes thread evaluates the same states against
  // what the node holds, so lastTransitionTime survives restarts there.
  std::vector<NodeCondition> desired =
      EvaluateConditions(states, conditions_, now, options_.conditions);
  for (const auto& c : desired) {
    auto it = conditions_.find(c.type);
    if (it == conditions_.end() || it->second.status != c.status) {
      Log("condition " + c.type + "=" + c.status + " (" + c.reason + "): " + c.message);
    }
    conditions_[c.type] = c;
  }
  KubeCounters counters;
  if (kube_) {
    kube_->Submit(std::move(states), now);
    counters = kube_->counters();
  }
  collector_->SetConditions(desired, counters);
}

Status Agent::Loop(int stop_fd, int wake_fd) {
  scheduler_->Start();
  bool ready = false;
  auto next = std::chrono::steady_clock::now();
  while (true) {
    if (!ready && scheduler_->WaitForRuns(1, milliseconds(0))) {
      ready = true;
      server_->SetReady(true);
      Log("ready: every task has run once");
      next = std::chrono::steady_clock::now();  // reconcile at once with full results
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      if (ready) Reconcile();
      next = now + (ready ? options_.reconcile : milliseconds(50));
    }
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<milliseconds>(next - std::chrono::steady_clock::now()).count());
    pollfd fds[2] = {{stop_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int n = poll(fds, wake_fd >= 0 ? 2 : 1, std::max(wait_ms, 0));
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP))) break;
    if (n > 0 && wake_fd >= 0 && (fds[1].revents & POLLIN)) {
      char buf[64];
      (void)!read(wake_fd, buf, sizeof buf);
      Log("SIGHUP: running every task now");
      scheduler_->RunAllNow();
    }
  }
  return Status::Ok();
}

void Agent::Shutdown() {
  if (server_) server_->SetReady(false);
  if (kube_) kube_->Stop(std::chrono::milliseconds(300));
  if (scheduler_) scheduler_->Stop();  // returns at once: stuck workers are abandoned
  if (server_) server_->Stop();
}

}  // namespace tocsin::agent
