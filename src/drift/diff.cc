#include "audit/plugin_config.h"
#include "drift/catalog.h"
#include "drift/differ.h"

namespace tocsin::drift {

using internal::Differ;

std::string_view GroupName(Group g) {
  switch (g) {
    case Group::kNodes:
      return "nodes";
    case Group::kDevicePlugin:
      return "device plugin";
    case Group::kNetworks:
      return "networks";
    case Group::kTemplates:
      return "templates";
  }
  return "?";
}

namespace internal {

bool Differ::Compare(Group group, const std::string& name, const std::string& a,
                     const std::string& b) {
  out_.items.push_back({group, name, a, b, a != b});
  return a != b;
}

void Differ::Push(const char* check, Severity severity, const std::string& subject,
                  std::string message, nlohmann::json evidence) {
  Finding f;
  f.check = check;
  f.severity = severity;
  f.subject = subject;
  f.message = std::move(message);
  f.evidence = std::move(evidence);
  out_.findings.push_back(std::move(f));
}

void Differ::Add(const char* check, Severity severity, Group group, const std::string& subject,
                 std::string message, const std::string& a, const std::string& b,
                 nlohmann::json extra) {
  nlohmann::json evidence = {{"group", GroupName(group)},
                             {"a", a},
                             {"b", b},
                             {"side_a", a_.name},
                             {"side_b", b_.name},
                             {"source_a", a_.source},
                             {"source_b", b_.source}};
  evidence.update(extra);
  Push(check, severity, subject, std::move(message), std::move(evidence));
}

void Differ::AddOneSide(const char* check, Severity severity, Group group,
                        const std::string& subject, std::string message, const Side& side,
                        nlohmann::json extra) {
  nlohmann::json evidence = {
      {"group", GroupName(group)}, {"side", side.name}, {"source", side.source}};
  evidence.update(extra);
  Push(check, severity, subject, std::move(message), std::move(evidence));
}

std::string Differ::Label(const Side& side) const {
  return std::string(&side == &a_ ? "A" : "B") + " (" + side.name + ")";
}

std::string Major(const std::string& version, char sep) {
  size_t p = version.find(sep);
  return p == std::string::npos ? version : version.substr(0, p);
}

}  // namespace internal

namespace {

// Nothing that diff compares: an empty List (a wrong context, namespace or file).
bool NothingToCompare(const k8s::Snapshot& s) {
  return s.nodes.empty() && s.daemonsets.empty() && s.configmaps.empty() && s.networks.empty() &&
         s.sriov_policies.empty() && s.nic_policies.empty() && s.workloads.empty();
}

}  // namespace

DiffResult Diff(const Side& a, const Side& b, const Options& options) {
  DiffResult out;
  Differ d(a, b, out);
  // An empty side is not compared against: everything on the other would be "missing" there.
  // An error: the two clusters were not compared, so a CI gate must not pass (tocsin cannot know).
  bool empty = false;
  for (const Side* s : {&a, &b}) {
    if (!NothingToCompare(*s->snapshot)) continue;
    empty = true;
    d.AddOneSide(kInputEmpty, Severity::kError, Group::kNodes, "side " + d.Label(*s),
                 "side " + d.Label(*s) +
                     " holds none of the objects diff compares (a wrong context, namespace or "
                     "file?): the two sides were not compared",
                 *s, nlohmann::json::object());
  }
  if (empty) return out;
  audit::Options a_options = audit::WithPluginConfig(*a.snapshot, options.audit);
  audit::Options b_options = audit::WithPluginConfig(*b.snapshot, options.audit);
  internal::CompareNodes(d, options, a_options, b_options);
  internal::ComparePlugins(d, a_options, b_options);
  internal::CompareNetworks(d);
  internal::CompareTemplates(d);
  return out;
}

void KeepNamespace(k8s::Snapshot& s, const std::string& ns) {
  auto other = [&](const auto& o) { return o.ns != ns; };
  std::erase_if(s.pods, other);
  std::erase_if(s.daemonsets, other);
  std::erase_if(s.configmaps, other);
  std::erase_if(s.networks, other);
  std::erase_if(s.sriov_policies, other);
  std::erase_if(s.workloads, other);
}

void DropKind(k8s::Snapshot& s, const std::string& kind) {
  if (kind == "Node") s.nodes.clear();
  if (kind == "DaemonSet") s.daemonsets.clear();
  if (kind == "NetworkAttachmentDefinition") s.networks.clear();
  if (kind == "SriovNetworkNodePolicy") s.sriov_policies.clear();
  if (kind == "NicClusterPolicy") s.nic_policies.clear();
  if (kind == "ConfigMap") s.configmaps.clear();
  std::erase_if(s.workloads, [&](const k8s::Workload& w) { return w.kind == kind; });
}

nlohmann::json Inventory(const Side& a, const Side& b, const DiffResult& result,
                         const Options& options) {
  nlohmann::json inv;
  for (const Side* s : {&a, &b}) {
    std::map<std::string, int> classes;
    for (const auto& n : s->snapshot->nodes) classes[NodeClass(n, options)]++;
    const k8s::Snapshot& snap = *s->snapshot;
    inv[s == &a ? "a" : "b"] = {{"name", s->name},
                                {"source", s->source},
                                {"nodes", snap.nodes.size()},
                                {"classes", classes},
                                {"daemonsets", snap.daemonsets.size()},
                                {"network_attachments", snap.networks.size()},
                                {"sriov_policies", snap.sriov_policies.size()},
                                {"nic_cluster_policies", snap.nic_policies.size()},
                                {"workloads", snap.workloads.size()}};
  }
  nlohmann::json items = nlohmann::json::array();
  for (const auto& it : result.items) {
    items.push_back({{"group", GroupName(it.group)},
                     {"name", it.name},
                     {"a", it.a},
                     {"b", it.b},
                     {"differs", it.differs}});
  }
  inv["items"] = std::move(items);
  return inv;
}

}  // namespace tocsin::drift
