#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/checks.h"
#include "base/finding.h"
#include "k8s/objects.h"

namespace tocsin::drift {

// `tocsin diff`: two snapshots (staging and production) compared by role, never by name
// (README.md, "tocsin diff"). Pure: no I/O.

// One side: its snapshot and where it came from (a file or ctx:NAME), as the user named it.
struct Side {
  std::string name;    // "staging.json", "ctx:prod": what messages call the side
  std::string source;  // the file or the API server
  const k8s::Snapshot* snapshot = nullptr;
};

struct Options {
  // Node labels whose values name a node's class (--class-label). Empty: the instance type
  // (node.kubernetes.io/instance-type, else beta.kubernetes.io/instance-type) and the GPU
  // product (nvidia.com/gpu.product).
  std::vector<std::string> class_labels;
  // Device plugins and RDMA resources as the audit recognises them (--device-plugin,
  // --rdma-resource); each side's plugin config is read from its own snapshot.
  audit::Options audit;
};

// The four groups of compared items (the table's sections, the JUnit test suites).
enum class Group { kNodes, kDevicePlugin, kNetworks, kTemplates };
std::string_view GroupName(Group g);  // "nodes", "device plugin", "networks", "templates"

// One compared item: a class's fact, a plugin, a network, a template variable. Its findings are
// those whose subject is `name`.
struct Item {
  Group group;
  std::string name;
  std::string a, b;  // the two values ("(absent)" when a side has none)
  bool differs = false;
};

struct DiffResult {
  std::vector<Finding> findings;  // unsorted: the report sorts
  std::vector<Item> items;
};

// Every finding's evidence: {"group", "a", "b", "source_a", "source_b"} (the sides' names and
// sources), plus what the check adds (outliers, counts).
DiffResult Diff(const Side& a, const Side& b, const Options& options);

// The node facts compared (facts.cc), by name; exposed for tests and the inventory. The HCA and
// MOFED facts come from the agent's annotation: a node without one (no agent), or whose one
// cannot be read, has none, and they are compared between the nodes and classes that have them
// only (an unreadable annotation is a drift.node.fabric warning naming the node).
k8s::StringMap NodeFacts(const k8s::Node& node, const audit::Options& side_options);
// A node's class under `options` ("(no class label)" when it has none of the labels).
std::string NodeClass(const k8s::Node& node, const Options& options);

// Drops the namespaced objects outside `ns` (two namespaces of one cluster as two sides:
// --namespace-a/-b, the controller's --drift-namespace); cluster-scoped ones stay.
void KeepNamespace(k8s::Snapshot& s, const std::string& ns);
// Drops every object of `kind` (one that a side could not read, so that it is compared on
// neither side).
void DropKind(k8s::Snapshot& s, const std::string& kind);

// {"a": {...}, "b": {...}, "items": [...]}: the inventory of `-o json`.
nlohmann::json Inventory(const Side& a, const Side& b, const DiffResult& result,
                         const Options& options);

}  // namespace tocsin::drift
