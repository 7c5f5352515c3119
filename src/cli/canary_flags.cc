#include "cli/canary_flags.h"

#include <cstdlib>

#include "cli/daemon_flags.h"
#include "cli/number_flags.h"

namespace tocsin::cli {

void CanaryFlags::AddTo(CLI::App* cmd) {
  const char* g = "Canaries";
  cmd->add_flag("--canary", enabled,
                "Run canaries: the leader runs 2-rank `tocsin bench net` Jobs on idle fabric "
                "nodes every --canary-interval, asking for the fabric as training does")
      ->group(g);
  cmd->add_option("--canary-namespace", ns,
                  "Namespace of the canary Jobs, their state ConfigMap and token Secret "
                  "(default: $POD_NAMESPACE, else tocsin)")
      ->group(g);
  cmd->add_option("--canary-image", image, "Image of the canary pods (this build of tocsin)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-resource", resources,
                  "NAME=QTY each canary pod requests and limits, e.g. "
                  "rdma/hca_shared_devices_a=1 (repeatable)")
      ->group(g);
  cmd->add_option("--canary-network", network,
                  "The Multus network annotation (k8s.v1.cni.cncf.io/networks) of the pods")
      ->group(g);
  cmd->add_option("--canary-priority-class", priority_class,
                  "PriorityClass of the pods (canary-rbac.yaml creates tocsin-canary: -100, never "
                  "preempting; \"\" for none)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-queue", queue,
                  "Kueue LocalQueue of the Jobs (label kueue.x-k8s.io/queue-name): a canary the "
                  "queue does not admit in time is canary.admission")
      ->group(g);
  cmd->add_option("--canary-env-from", env_from,
                  "KIND/NAMESPACE/NAME whose NCCL_*, FI_*, UCX_* env and tolerations the pods "
                  "copy: configmap, job, cronjob, pytorchjob, mpijob or jobset")
      ->group(g);
  cmd->add_option("--canary-expect", expect,
                  "The data path canaries must get: rdma (bench net --require rdma) or tcp")
      ->check(CLI::IsMember({"rdma", "tcp"}))
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-transport", transport,
                  "bench net --transport (default: fabric with --canary-expect rdma, else tcp)")
      ->check(CLI::IsMember({"fabric", "tcp"}))
      ->group(g);
  cmd->add_option("--canary-provider", provider, "bench net --provider (libfabric's)")->group(g);
  cmd->add_option("--canary-test", tests, "bench net -t (repeatable)")
      ->check(CLI::IsMember({"p2p", "allreduce", "allgather", "alltoall"}))
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-minbytes", min_bytes, "bench net -b")->capture_default_str()->group(g);
  cmd->add_option("--canary-maxbytes", max_bytes, "bench net -e")->capture_default_str()->group(g);
  cmd->add_option("--canary-min-busbw", min_busbw,
                  "GB/s: a pair below it is canary.busbw.low (0: no floor)")
      ->check(Number(0, 1e9))
      ->group(g);
  cmd->add_option("--canary-interval", interval, "A round starts this often")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-pending-deadline", pending_deadline,
                  "A rank not running after this is a finding with its cause")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-stale-after", stale_after,
                  "A fabric node with no passing canary for this long is canary.stale; also the "
                  "coverage window (default: 3 intervals times the rounds it takes to go round "
                  "every fabric node, fabric nodes / --canary-max-nodes)")
      ->group(g);
  cmd->add_option("--canary-max-nodes", max_nodes, "Nodes in canaries at once")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-timeout", bench_timeout, "bench net --timeout in the pods")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-active-deadline", active_deadline,
                  "activeDeadlineSeconds of each canary Job")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--canary-ttl", ttl, "ttlSecondsAfterFinished of each canary Job")
      ->capture_default_str()
      ->group(g);
  cmd->add_flag("--canary-no-ipc-lock", no_ipc_lock,
                "Do not add IPC_LOCK (platforms whose RDMA stack needs no locked memory)")
      ->group(g);
  cmd->add_option("--canary-port", port, "Rank 0's coordinator port")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str()
      ->group(g);
}

namespace {

Status Secs(const char* flag, const std::string& text, int& out) {
  std::chrono::milliseconds ms{};
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag(flag, text, ms));
  if (ms < std::chrono::seconds(1)) return Status::InvalidArgument(std::string(flag) + " must be at least 1s");
  out = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(ms).count());
  return Status::Ok();
}

}  // namespace

Status CanaryFlags::Apply(controller::CanaryOptions& o, const std::string& topology) const {
  o.enabled = enabled;
  canary::CanaryConfig& c = o.job;
  const char* pod_ns = std::getenv("POD_NAMESPACE");
  c.ns = !ns.empty() ? ns : pod_ns && *pod_ns ? pod_ns : "tocsin";
  c.image = image;
  for (const std::string& r : resources) {
    size_t eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      return Status::InvalidArgument("--canary-resource " + r + ": expected NAME=QUANTITY");
    }
    c.resources.emplace_back(r.substr(0, eq), r.substr(eq + 1));
  }
  c.network = network;
  c.priority_class = priority_class;
  c.queue = queue;
  c.ipc_lock = !no_ipc_lock;
  c.expect = expect;
  c.transport = !transport.empty() ? transport : expect == "rdma" ? "fabric" : "tcp";
  c.provider = provider;
  c.tests = tests;
  c.min_bytes = min_bytes;
  c.max_bytes = max_bytes;
  c.min_busbw = min_busbw;
  c.port = port;
  TOCSIN_RETURN_IF_ERROR(Secs("--canary-timeout", bench_timeout, c.bench_timeout_s));
  TOCSIN_RETURN_IF_ERROR(Secs("--canary-active-deadline", active_deadline, c.active_deadline_s));
  TOCSIN_RETURN_IF_ERROR(Secs("--canary-ttl", ttl, c.ttl_after_finished_s));
  int secs = 0;
  TOCSIN_RETURN_IF_ERROR(Secs("--canary-interval", interval, secs));
  o.interval = std::chrono::seconds(secs);
  TOCSIN_RETURN_IF_ERROR(Secs("--canary-pending-deadline", pending_deadline, secs));
  o.judge.pending_deadline = std::chrono::seconds(secs);
  if (!stale_after.empty()) {
    TOCSIN_RETURN_IF_ERROR(Secs("--canary-stale-after", stale_after, secs));
    o.stale_after = std::chrono::seconds(secs);
  }
  o.judge.expect = expect;
  o.judge.min_busbw = min_busbw;
  o.judge.finish_grace = std::chrono::seconds(c.bench_timeout_s + 30);
  o.judge.bench_timeout = std::chrono::seconds(c.bench_timeout_s);
  for (const auto& [name, qty] : c.resources) o.judge.resources.push_back(name);
  o.max_nodes = max_nodes;
  o.env_from = env_from;
  o.topology_label = topology;
  if (enabled && expect == "rdma" && c.resources.empty()) {
    return Status::InvalidArgument(
        "--canary with --canary-expect rdma needs --canary-resource NAME=QTY (the RDMA resource "
        "training jobs request): a canary that does not ask the device plugin proves nothing");
  }
  return Status::Ok();
}

}  // namespace tocsin::cli
