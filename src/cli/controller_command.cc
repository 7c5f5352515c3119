#include "cli/controller_command.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "cli/canary_flags.h"
#include "cli/daemon_flags.h"
#include "cli/report_flags.h"
#include "controller/controller.h"
#include "k8s/objects.h"
#include "sys/env.h"

namespace tocsin::cli {
namespace {

struct ControllerFlags {
  std::string listen = "0.0.0.0:9465";
  std::string kubeconfig, context;
  std::string request_timeout = "30s";
  std::string settle = "1s", resync = "5m", clear_after = "30s";
  bool leader_elect = false;
  std::string lease_name = "tocsin-controller", lease_namespace, identity;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  std::string event_namespace = "default";
  bool no_events = false;
  AuditCheckFlags checks;
  CanaryFlags canary;
  std::string admission_listen, tls_cert_file, tls_key_file;
  std::vector<std::string> admission_deny;
  std::string policy_params;
  std::string drift_baseline, drift_baseline_namespace, drift_namespace, drift_accept;
  std::string drift_context, drift_kubeconfig;
  std::string drift_interval = "5m";
  std::vector<std::string> drift_class_labels;
};

int g_stop_pipe[2] = {-1, -1};
std::atomic<bool> g_stop{false};  // lock-free: set from the signal handler
extern "C" void OnControllerStop(int) {
  g_stop.store(true);
  (void)!write(g_stop_pipe[1], "x", 1);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Result<controller::ControllerOptions> BuildOptions(const ControllerFlags& f) {
  controller::ControllerOptions o;
  TOCSIN_RETURN_IF_ERROR(ParseListen(f.listen, o.listen_host, o.listen_port));
  if (!f.admission_listen.empty()) {
    TOCSIN_RETURN_IF_ERROR(ParseListen(f.admission_listen, o.admission.host, o.admission.port));
    if (o.admission.port == 0) return Status::InvalidArgument("--admission-listen needs a port");
    if (f.tls_cert_file.empty() || f.tls_key_file.empty()) {
      return Status::InvalidArgument(
          "--admission-listen needs --tls-cert-file and --tls-private-key-file (the API server "
          "calls webhooks over HTTPS only)");
    }
  }
  o.admission.cert_file = f.tls_cert_file;
  o.admission.key_file = f.tls_key_file;
  o.admission.deny.insert(f.admission_deny.begin(), f.admission_deny.end());
  if (!f.policy_params.empty()) {
    size_t slash = f.policy_params.find('/');
    std::string ns = f.policy_params.substr(0, slash);
    std::string name = slash == std::string::npos ? "" : f.policy_params.substr(slash + 1);
    if (!k8s::IsObjectName(ns) || !k8s::IsObjectName(name)) {
      return Status::InvalidArgument("--policy-params " + f.policy_params +
                                     ": expected NAMESPACE/NAME (e.g. tocsin/tocsin-policy-params)");
    }
    o.policy_params.ns = ns;
    o.policy_params.name = name;
  }
  o.kubeconfig = {f.kubeconfig, f.context};
  TOCSIN_RETURN_IF_ERROR(
      ParseDurationFlag("--request-timeout", f.request_timeout, o.client.request_timeout));
  o.client.connect_timeout = std::min(o.client.connect_timeout, o.client.request_timeout);
  o.client.attempts = 2;  // informers and evaluations retry on their own
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag("--settle", f.settle, o.settle));
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag("--resync", f.resync, o.resync));
  if (o.resync < o.settle) return Status::InvalidArgument("--resync must be at least --settle");
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag("--clear-after", f.clear_after, o.clear_after));
  o.leader_elect = f.leader_elect;
  o.lease.name = f.lease_name;
  o.lease.ns = !f.lease_namespace.empty() ? f.lease_namespace
               : !Env("POD_NAMESPACE").empty() ? Env("POD_NAMESPACE")
                                               : "tocsin";
  std::string identity = f.identity;
  if (identity.empty()) {
    // client-go's default: the host (the pod's name) and a random suffix, so that a restarted
    // process never mistakes its predecessor's Lease for its own.
    std::string host = Env("POD_NAME");
    if (host.empty()) host = HostName(*NewRootedEnv());
    std::mt19937_64 rng(std::random_device{}());
    identity = fmt::format("{}_{:016x}", host.empty() ? "tocsin-controller" : host, rng());
  }
  o.lease.identity = identity;
  TOCSIN_RETURN_IF_ERROR(
      ParseDurationFlag("--lease-duration", f.lease_duration, o.lease.lease_duration));
  TOCSIN_RETURN_IF_ERROR(
      ParseDurationFlag("--renew-deadline", f.renew_deadline, o.lease.renew_deadline));
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag("--retry-period", f.retry_period, o.lease.retry_period));
  if (!(o.lease.lease_duration > o.lease.renew_deadline &&
        o.lease.renew_deadline > o.lease.retry_period)) {
    return Status::InvalidArgument(
        "--lease-duration must be longer than --renew-deadline, which must be longer than "
        "--retry-period");
  }
  o.events = !f.no_events;
  o.stop = &g_stop;
  o.event_namespace = f.event_namespace;
  TOCSIN_RETURN_IF_ERROR(f.checks.Apply(o.audit));
  TOCSIN_RETURN_IF_ERROR(f.canary.Apply(o.canary, o.audit.topology_label));
  o.drift.baseline = f.drift_baseline;
  if (!f.drift_context.empty()) {
    if (!f.drift_baseline.empty()) {
      return Status::InvalidArgument("--drift-baseline and --drift-context: one baseline, not two");
    }
    o.drift.baseline_cluster = k8s::KubeconfigOptions{f.drift_kubeconfig, f.drift_context};
  } else if (!f.drift_kubeconfig.empty()) {
    return Status::InvalidArgument("--drift-kubeconfig needs --drift-context");
  }
  o.drift.baseline_namespace = f.drift_baseline_namespace;
  o.drift.live_namespace = f.drift_namespace;
  o.drift.accept = f.drift_accept;
  o.drift.class_labels = f.drift_class_labels;
  TOCSIN_RETURN_IF_ERROR(ParseDurationFlag("--drift-interval", f.drift_interval, o.drift.interval));
  if (o.drift.interval < std::chrono::seconds(1)) {
    return Status::InvalidArgument("--drift-interval must be at least 1s");
  }
  if (!controller::DriftEnabled(o.drift) &&
      !(f.drift_accept.empty() && f.drift_namespace.empty() && f.drift_baseline_namespace.empty() &&
        f.drift_class_labels.empty())) {
    return Status::InvalidArgument("the --drift-* flags need --drift-baseline or --drift-context");
  }
  return o;
}

int RunController(const ControllerFlags& f) {
  auto options = BuildOptions(f);
  if (!options.ok()) return UsageError(options.status().message());
  if (pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return UsageError("pipe: " + std::string(strerror(errno)));
  }
  struct sigaction sa {};
  sa.sa_handler = OnControllerStop;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // glibc gives each thread that allocates its own arena (informers, the evaluation, 16 HTTP
  // workers), and an arena keeps its peak: under churn that doubled the RSS (docs/BENCHMARKS.md).
  mallopt(M_ARENA_MAX, 2);
  controller::Controller c(std::move(*options));
  // Step 1: credentials and what to watch; step 2: serve HTTP.
  if (Status st = c.Discover(); !st.ok()) return UsageError(st.message());
  if (Status st = c.StartHttp(); !st.ok()) return UsageError(st.message());
  // Step 3: watch and evaluate until SIGTERM or SIGINT.
  Status st = c.Loop(g_stop_pipe[0]);
  // Step 4: informers stopped, a held Lease released.
  controller::Log("shutting down");
  c.Shutdown();
  controller::Log("stopped");
  if (!st.ok()) {
    std::cerr << "tocsin: error: " << st.message() << "\n";
    return 3;
  }
  return kExitOk;
}

}  // namespace

Command AddControllerCommand(CLI::App& parent) {
  auto f = std::make_shared<ControllerFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "controller",
      "The cluster audit, always on: watches Nodes, Pods, DaemonSets and jobs, re-runs the "
      "audit's checks on every change, serves findings with their onset as metrics, posts Events");
  cmd->add_option("--listen", f->listen, "HOST:PORT of /metrics, /healthz, /readyz")
      ->capture_default_str();
  cmd->add_option("--kubeconfig", f->kubeconfig,
                  "Kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)");
  cmd->add_option("--context", f->context, "Kubeconfig context");
  cmd->add_option("--request-timeout", f->request_timeout,
                  "Bound of one API request (watches have their own)")
      ->capture_default_str();
  cmd->add_option("--settle", f->settle,
                  "After a change, evaluate at most once per this (changes coalesce)")
      ->capture_default_str();
  cmd->add_option("--resync", f->resync,
                  "Evaluate at least this often, so that ages and time-based severities advance")
      ->capture_default_str();
  cmd->add_option("--clear-after", f->clear_after,
                  "A finding must stay gone this long before it is cleared with a Normal Event "
                  "(/metrics drops it at once); one back sooner keeps its onset and Warning")
      ->capture_default_str();
  cmd->add_flag("--leader-elect", f->leader_elect,
                "Elect a leader on a coordination.k8s.io Lease: only it posts Events and keeps "
                "the onsets in the Lease (every replica serves metrics)");
  cmd->add_option("--lease-name", f->lease_name, "The Lease")->capture_default_str();
  cmd->add_option("--lease-namespace", f->lease_namespace,
                  "The Lease's namespace (default: $POD_NAMESPACE, else tocsin)");
  cmd->add_option("--identity", f->identity,
                  "This replica in the Lease (default: $POD_NAME or the host, and a random "
                  "suffix)");
  cmd->add_option("--lease-duration", f->lease_duration,
                  "A leader not renewing for this long may be replaced")
      ->capture_default_str();
  cmd->add_option("--renew-deadline", f->renew_deadline,
                  "A leader that cannot renew for this long stops writing")
      ->capture_default_str();
  cmd->add_option("--retry-period", f->retry_period, "How often the Lease is tried or renewed")
      ->capture_default_str();
  cmd->add_option("--event-namespace", f->event_namespace,
                  "Namespace of Events about cluster-scoped objects (Nodes)")
      ->capture_default_str();
  cmd->add_flag("--no-events", f->no_events, "Post no Events (metrics only)");
  f->checks.AddTo(cmd);
  f->canary.AddTo(cmd);
  cmd->add_option("--admission-listen", f->admission_listen,
                  "HOST:PORT of the validating admission webhook (HTTPS POST /validate): the "
                  "audit's job checks as warnings when a job is created (off without it)");
  cmd->add_option("--tls-cert-file", f->tls_cert_file,
                  "The webhook's serving certificate (PEM, chain after it); re-read when it "
                  "changes");
  cmd->add_option("--tls-private-key-file", f->tls_key_file,
                  "The webhook's private key (PEM); re-read when it changes");
  cmd->add_option("--admission-deny", f->admission_deny,
                  "Check id the webhook denies instead of warning about (repeatable)");
  cmd->add_option("--policy-params", f->policy_params,
                  "NAMESPACE/NAME of `tocsin policy`'s params ConfigMap: kept current with what "
                  "the cluster offers (needs deploy/components/policy-params; off without it)");
  cmd->add_option("--drift-baseline", f->drift_baseline,
                  "A tocsin snapshot of the cluster this one must not drift from (staging): "
                  "tocsin diff against it every --drift-interval, drift.* findings exported");
  cmd->add_option("--drift-context", f->drift_context,
                  "Instead of a file: the baseline is this kubeconfig context's cluster (staging), "
                  "listed read-only at every run as tocsin diff ctx:NAME lists it");
  cmd->add_option("--drift-kubeconfig", f->drift_kubeconfig,
                  "The kubeconfig file --drift-context is in (default: $KUBECONFIG, then "
                  "~/.kube/config)");
  cmd->add_option("--drift-interval", f->drift_interval, "How often drift is judged")
      ->capture_default_str();
  cmd->add_option("--drift-accept", f->drift_accept,
                  "YAML file of accepted differences, as tocsin diff --accept (re-read each run)");
  cmd->add_option("--drift-namespace", f->drift_namespace,
                  "Compare only this namespace's objects of the live cluster (cluster-scoped "
                  "ones stay)");
  cmd->add_option("--drift-baseline-namespace", f->drift_baseline_namespace,
                  "Compare only this namespace's objects of the baseline");
  cmd->add_option("--drift-class-label", f->drift_class_labels,
                  "Node label whose value names a node's class (repeatable; as tocsin diff "
                  "--class-label)");
  return {cmd, [f] { return RunController(*f); }};
}

}  // namespace tocsin::cli
