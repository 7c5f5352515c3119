#include "cli/diff_command.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include "audit/checks.h"
#include "cli/live_flags.h"
#include "cli/report_flags.h"
#include "drift/accept.h"
#include "drift/drift.h"
#include "drift/render.h"
#include "k8s/decode.h"
#include "sys/env.h"

namespace tocsin::cli {
namespace {

constexpr char kContextPrefix[] = "ctx:";

struct DiffFlags {
  ReportFlags report;
  LiveFlags live;
  std::string a, b;                      // positional: FILE or ctx:NAME
  std::string context_a, context_b;      // --context-a/--context-b
  std::string namespace_a, namespace_b;  // --namespace-a/--namespace-b
  std::vector<std::string> class_labels;
  std::vector<std::string> device_plugins;
  std::vector<std::string> rdma_resources;
  std::string accept;
  std::string now;
};

// One side: a file (or - for stdin), or a live context (ctx:NAME; "ctx:" alone: the current
// one). Returns the exit code of a failure, else 0.
int LoadSide(const DiffFlags& f, const std::string& spec, const std::string& ns,
             const audit::Options& options, drift::Side& side, k8s::Snapshot& snap) {
  side.name = spec;
  if (spec.starts_with(kContextPrefix)) {
    std::string context = spec.substr(sizeof(kContextPrefix) - 1);
    auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, options); };
    int rc = LoadLive(
        f.live, context,
        [&](k8s::ApiClient& client, k8s::Snapshot& out) {
          return k8s::LoadFabric(client, out, plugin);
        },
        snap);
    if (rc != 0) return rc;
    side.source = snap.sources.empty() ? spec : snap.sources.back();
  } else {
    if (Status st = k8s::LoadFile(spec, snap); !st.ok()) return UsageError(st.message());
    side.source = spec;
  }
  if (!ns.empty()) {
    drift::KeepNamespace(snap, ns);
    side.name += " (namespace " + ns + ")";
  }
  side.snapshot = &snap;
  return 0;
}

int RunDiff(const DiffFlags& f) {
  if (Status st = f.live.Check(); !st.ok()) return UsageError(st.message());
  // --context-a/--context-b take their side; the positional sides fill the others in order.
  std::vector<std::string> positional;
  for (const auto* p : {&f.a, &f.b}) {
    if (!p->empty()) positional.push_back(*p);
  }
  std::string a = f.context_a.empty() ? "" : kContextPrefix + f.context_a;
  std::string b = f.context_b.empty() ? "" : kContextPrefix + f.context_b;
  size_t next = 0;
  if (a.empty() && next < positional.size()) a = positional[next++];
  if (b.empty() && next < positional.size()) b = positional[next++];
  if (next < positional.size()) return UsageError("more than two sides");
  if (a.empty() || b.empty()) {
    return UsageError("diff needs two sides: A B (files or ctx:NAME), or --context-a/--context-b");
  }
  if (a == "-" && b == "-") {
    return UsageError("stdin (-) can be one side only: it is read once (save the other to a file)");
  }
  drift::Options options;
  options.class_labels = f.class_labels;
  options.audit.device_plugins = f.device_plugins;
  options.audit.rdma_resources = f.rdma_resources;
  TimePoint now = Clock::now();
  if (!f.now.empty()) {
    auto t = ParseRfc3339(f.now);
    if (!t) return UsageError("--now: not an RFC 3339 time: \"" + f.now + "\"");
    now = *t;
  }
  std::vector<drift::Acceptance> accepted;
  if (!f.accept.empty()) {
    auto text = ReadRegularFile(f.accept);
    if (!text.ok()) return UsageError("--accept " + text.status().message());
    auto parsed = drift::ParseAcceptFile(*text);
    if (!parsed.ok()) return UsageError("--accept " + f.accept + ": " + parsed.status().message());
    accepted = std::move(*parsed);
  }
  k8s::Snapshot snap_a, snap_b;
  drift::Side side_a, side_b;
  if (int rc = LoadSide(f, a, f.namespace_a, options.audit, side_a, snap_a); rc != 0) return rc;
  if (int rc = LoadSide(f, b, f.namespace_b, options.audit, side_b, snap_b); rc != 0) return rc;

  drift::DiffResult result = drift::Diff(side_a, side_b, options);
  drift::ApplyAcceptances(result.findings, accepted, now);
  Report report;
  report.command = "diff";
  report.host = side_a.name + " vs " + side_b.name;
  report.generated_at = now;
  report.findings = std::move(result.findings);
  SortFindings(report.findings, report.order);
  report.inventory = drift::Inventory(side_a, side_b, result, options);
  report.tables = drift::Tables(side_a, side_b, result, options);
  if (f.report.output == "junit" || f.report.output == "markdown") {
    std::string text =
        f.report.output == "junit"
            ? drift::RenderJunit(report, result.items,
                                 ParseSeverity(f.report.fail_on).value_or(Severity::kError))
            : drift::RenderMarkdown(report, side_a, side_b);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return f.report.ExitCode(report);
  }
  return f.report.Emit(std::move(report));
}

struct SnapshotFlags {
  LiveFlags live;
  std::vector<std::string> from;
  std::string context;
  std::string out = "-";
  std::vector<std::string> device_plugins;
  bool pods = true;
};

int RunSnapshot(const SnapshotFlags& f) {
  if (!f.from.empty() && (!f.live.kubeconfig.empty() || !f.context.empty())) {
    return UsageError("--from reads files; --kubeconfig/--context are for the live API");
  }
  if (Status st = f.live.Check(); !st.ok()) return UsageError(st.message());
  k8s::Snapshot snap;
  snap.keep_raw = true;
  for (const auto& path : f.from) {
    if (Status st = k8s::LoadFile(path, snap); !st.ok())
      return UsageError("--from " + st.message());
  }
  if (f.from.empty()) {
    audit::Options options;
    options.device_plugins = f.device_plugins;
    auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, options); };
    int rc = LoadLive(
        f.live, f.context,
        [&](k8s::ApiClient& client, k8s::Snapshot& out) {
          Status st = k8s::LoadFabric(client, out, plugin);
          if (st.ok() && f.pods) st = client.List("/api/v1/pods", "Pod", out);
          return st;
        },
        snap);
    if (rc != 0) return rc;
  }
  std::string text = k8s::EncodeRawList(snap);
  if (f.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
  }
  FILE* file = std::fopen(f.out.c_str(), "w");
  if (file == nullptr) return UsageError("--out " + f.out + ": cannot be written");
  bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok) return UsageError("--out " + f.out + ": write failed");
  std::cerr << "tocsin: " << snap.raw.size() << " objects written to " << f.out << "\n";
  return kExitOk;
}

}  // namespace

Command AddDiffCommand(CLI::App& parent) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "diff",
      "Compare two clusters (staging and production) where the fabric is concerned: node classes, "
      "device plugins, networks, job templates; by role, never by name");
  flags->report.AddTo(cmd, {"table", "json", "junit", "markdown"});
  cmd->add_option("a", flags->a,
                  "Side A: a snapshot file (kubectl get ... -o json, tocsin "
                  "snapshot; - for stdin, one side only) or ctx:NAME (a live context; ctx: "
                  "alone: the current one)");
  cmd->add_option("b", flags->b, "Side B: the same");
  cmd->add_option("--context-a", flags->context_a, "Side A is this live kubeconfig context");
  cmd->add_option("--context-b", flags->context_b, "Side B is this live kubeconfig context");
  cmd->add_option("--namespace-a", flags->namespace_a,
                  "Compare only this namespace's objects of side A (cluster-scoped ones stay)");
  cmd->add_option("--namespace-b", flags->namespace_b, "The same for side B");
  cmd->add_option("--class-label", flags->class_labels,
                  "Node label whose value names a node's class (repeatable; default: the "
                  "instance type and nvidia.com/gpu.product)");
  cmd->add_option("--device-plugin", flags->device_plugins,
                  "NS/NAME of an RDMA device-plugin DaemonSet (repeatable; default: recognised "
                  "by name or image)");
  cmd->add_option("--rdma-resource", flags->rdma_resources,
                  "An extended resource that is RDMA (repeatable; rdma/* and the plugins' "
                  "configs are known)");
  cmd->add_option("--accept", flags->accept,
                  "YAML file of accepted differences (match, reason, expires): reported as info "
                  "until they expire");
  cmd->add_option("--now", flags->now,
                  "RFC 3339 time the acceptances' expiry is judged at "
                  "(default: now)");
  flags->live.AddTo(cmd);
  return {cmd, [flags] { return RunDiff(*flags); }};
}

Command AddSnapshotCommand(CLI::App& parent) {
  auto flags = std::make_shared<SnapshotFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "snapshot",
      "Write one file with what tocsin diff and tocsin audit --from read: nodes, pods, "
      "DaemonSets, device-plugin ConfigMaps, network attachments, SR-IOV policies, "
      "NicClusterPolicies, job templates");
  cmd->add_option("--from", flags->from,
                  "Merge these kubectl get -o json|yaml files (repeatable) instead of reading the "
                  "live API");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--out", flags->out, "The file to write (- for stdout)")->capture_default_str();
  cmd->add_option("--device-plugin", flags->device_plugins,
                  "NS/NAME of an RDMA device-plugin DaemonSet whose ConfigMaps to read "
                  "(repeatable; default: recognised by name or image)");
  cmd->add_flag("!--no-pods", flags->pods, "Leave pods out (diff does not read them; audit does)");
  flags->live.AddTo(cmd);
  return {cmd, [flags] { return RunSnapshot(*flags); }};
}

}  // namespace tocsin::cli
