// Node classes and their facts: per class the majority value of each fact with its outliers
// (drift.class.mixed), then the class majorities compared across the two sides.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "drift/catalog.h"
#include "drift/differ.h"
#include "k8s/fabric_facts.h"

namespace tocsin::drift {
namespace {

using internal::kAbsent;

constexpr size_t kMaxOutliersListed = 20;

// Labels compared as they are (docs/FORMATS.md, "Fabric configuration": NFD, GPU feature
// discovery).
constexpr const char* kFactLabels[] = {
    "feature.node.kubernetes.io/kernel-version.full",
    "feature.node.kubernetes.io/system-os_release.ID",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID",
    "feature.node.kubernetes.io/pci-15b3.present",
    "feature.node.kubernetes.io/rdma.capable",
    "feature.node.kubernetes.io/rdma.available",
    "nvidia.com/gpu.count",
    "nvidia.com/mig.strategy",
};

constexpr const char* kNodeInfo[][2] = {
    {"kernelVersion", "kernel"},
    {"osImage", "os image"},
    {"containerRuntimeVersion", "container runtime"},
    {"kubeletVersion", "kubelet"},
    {"architecture", "architecture"},
};

std::string Label(const k8s::StringMap& labels, const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

// "MAJOR.MINOR.REV" from the GPU feature discovery's labels (newer, then older names).
std::string Version(const k8s::StringMap& labels, const std::string& newer,
                    const std::string& older) {
  std::string full = Label(labels, newer + "-version.full");
  if (!full.empty()) return full;
  std::vector<std::string> parts;
  for (const char* p : {".major", ".minor", ".rev"}) {
    std::string v = Label(labels, older + p);
    if (!v.empty()) parts.push_back(v);
  }
  return Join(parts, ".");
}

// The sorted distinct values of one HCA field, joined: HCA names never count.
template <typename Field>
std::string HcaSet(const k8s::FabricFacts& f, Field field) {
  std::set<std::string> values;
  for (const auto& h : f.hcas) values.insert(h.*field);
  return Join(std::vector<std::string>(values.begin(), values.end()), ",");
}

enum class Kind { kRdma, kDriver, kMofed, kFirmware, kLinkLayer, kFabric, kSoftware };

Kind KindOf(const std::string& fact) {
  if (fact.starts_with("rdma ")) return Kind::kRdma;
  if (fact == "gpu driver") return Kind::kDriver;
  if (fact == "mofed driver") return Kind::kMofed;
  if (fact == "hca firmware") return Kind::kFirmware;
  if (fact == "hca link layer") return Kind::kLinkLayer;
  if (fact.starts_with("hca ")) return Kind::kFabric;
  return Kind::kSoftware;
}

// The facts of the agent's annotation: compared only between nodes that publish them.
bool IsFabricFact(const std::string& fact) {
  return fact == "mofed driver" || fact.starts_with("hca ");
}

// A node's facts and the state of its annotation: none (no agent, so no fabric facts), readable,
// or unreadable (why: then it has no fabric facts either, and drift.node.fabric says so).
struct NodeFactsOf {
  k8s::StringMap facts;
  bool fabric = false;     // a readable annotation
  std::string unreadable;  // why the annotation cannot be read
};

NodeFactsOf CollectFacts(const k8s::Node& node, const audit::Options& side_options);

struct FactCount {
  std::unordered_map<std::string, std::vector<const k8s::Node*>> by_value;
};

struct ClassFacts {
  std::vector<const k8s::Node*> nodes;
  std::map<std::string, std::string> majority;  // fact -> majority value
  bool fabric = false;                          // some node publishes readable fabric facts
};

// The nodes of a class whose annotation cannot be read: one warning per class and side.
void ReportUnreadable(internal::Differ& d, const Side& side, const std::string& cls,
                      const ClassFacts& cf, const std::vector<NodeFactsOf>& per_node) {
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<std::string> names;
  size_t count = 0;
  for (size_t i = 0; i < per_node.size(); ++i) {
    if (per_node[i].unreadable.empty()) continue;
    ++count;
    if (nodes.size() < kMaxOutliersListed) {
      nodes.push_back({{"node", cf.nodes[i]->name}, {"error", per_node[i].unreadable}});
      names.push_back(cf.nodes[i]->name);
    }
  }
  if (count == 0) return;
  if (count > names.size()) names.push_back("...");
  d.AddOneSide(kNodeFabric, Severity::kWarning, Group::kNodes, "class " + cls + ": fabric facts",
               "in " + side.name + ", " + std::to_string(count) + " of " +
                   std::to_string(cf.nodes.size()) + " nodes of class " + cls + " (" +
                   Join(names, ", ") + ") have a " + k8s::kFabricFactsAnnotation +
                   " annotation that cannot be read: their HCA facts were not compared",
               side, {{"nodes", nodes}, {"unreadable_count", count}});
}

// The most common value; a tie goes to the smallest value (deterministic).
std::string MajorityOf(const FactCount& c) {
  const std::string* best = nullptr;
  size_t best_n = 0;
  for (const auto& [value, nodes] : c.by_value) {
    if (nodes.size() > best_n || (nodes.size() == best_n && value < *best)) {
      best = &value;
      best_n = nodes.size();
    }
  }
  return best ? *best : kAbsent;
}

std::map<std::string, ClassFacts> Classify(internal::Differ& d, const Side& side,
                                           const Options& options,
                                           const audit::Options& side_options) {
  std::map<std::string, ClassFacts> classes;
  std::map<std::string, std::vector<NodeFactsOf>> facts;
  for (const auto& n : side.snapshot->nodes) {
    std::string cls = NodeClass(n, options);
    classes[cls].nodes.push_back(&n);
    facts[cls].push_back(CollectFacts(n, side_options));
  }
  for (auto& [cls, cf] : classes) {
    const auto& per_node = facts[cls];
    ReportUnreadable(d, side, cls, cf, per_node);
    std::set<std::string> names;
    for (const auto& f : per_node) {
      cf.fabric = cf.fabric || f.fabric;
      for (const auto& [k, v] : f.facts) names.insert(k);
    }
    for (const auto& fact : names) {
      // A node without readable fabric facts has no value for them, not "(absent)".
      bool fabric = IsFabricFact(fact);
      FactCount count;
      for (size_t i = 0; i < per_node.size(); ++i) {
        if (fabric && !per_node[i].fabric) continue;
        auto it = per_node[i].facts.find(fact);
        count.by_value[it == per_node[i].facts.end() ? kAbsent : it->second].push_back(cf.nodes[i]);
      }
      std::string majority = MajorityOf(count);
      cf.majority[fact] = majority;
      if (count.by_value.size() < 2) continue;
      nlohmann::json outliers = nlohmann::json::array();
      size_t outlier_count = 0;
      std::vector<std::string> values;
      for (const auto& [value, nodes] : count.by_value) {
        if (value == majority) continue;
        outlier_count += nodes.size();
        values.push_back(value);
        for (const k8s::Node* n : nodes) {
          if (outliers.size() < kMaxOutliersListed) {
            outliers.push_back({{"node", n->name}, {"value", value}});
          }
        }
      }
      std::sort(values.begin(), values.end());
      std::string subject = "class " + cls + ": " + fact;
      d.AddOneSide(kClassMixed, Severity::kWarning, Group::kNodes, subject,
                   "in " + side.name + ", " + std::to_string(outlier_count) + " of " +
                       std::to_string(cf.nodes.size()) + " nodes of class " + cls + " have " +
                       fact + " " + Join(values, " or ") + " (the others " + majority +
                       "): a class must be homogeneous",
                   side,
                   {{"majority", majority},
                    {"nodes", cf.nodes.size()},
                    {"outlier_count", outlier_count},
                    {"outliers", outliers}});
    }
  }
  return classes;
}

void CompareFact(internal::Differ& d, const std::string& cls, const std::string& fact,
                 const std::string& a, const std::string& b) {
  std::string subject = "class " + cls + ": " + fact;
  if (!d.Compare(Group::kNodes, subject, a, b)) return;
  const std::string& an = d.a().name;
  const std::string& bn = d.b().name;
  std::string both = " (" + an + ": " + a + ", " + bn + ": " + b + ")";
  switch (KindOf(fact)) {
    case Kind::kRdma: {
      std::string res = fact.substr(5);
      std::string msg;
      if (a == kAbsent || b == kAbsent) {
        const std::string& lacking = a == kAbsent ? an : bn;
        msg = "class " + cls + " nodes advertise no " + res + " in " + lacking +
              ": jobs asking for " + res + " will not schedule in " + lacking + both;
      } else {
        msg = "class " + cls + " nodes advertise " + a + " " + res + " in " + an + " and " + b +
              " in " + bn + ": jobs sized for one will not schedule in the other";
      }
      d.Add(kRdmaResource, Severity::kError, Group::kNodes, subject, msg, a, b);
      return;
    }
    case Kind::kDriver:
    case Kind::kMofed: {
      char sep = KindOf(fact) == Kind::kDriver ? '.' : '-';
      bool major = internal::Major(a, sep) != internal::Major(b, sep);
      d.Add(kNodeDriver, major ? Severity::kWarning : Severity::kInfo, Group::kNodes, subject,
            "class " + cls + ": the " + fact + (major ? " major version" : " version") +
                " differs" + both,
            a, b);
      return;
    }
    case Kind::kFirmware:
      d.Add(kNodeFirmware, Severity::kWarning, Group::kNodes, subject,
            "class " + cls + ": HCA firmware differs" + both, a, b);
      return;
    case Kind::kLinkLayer:
      d.Add(kNodeFabric, Severity::kError, Group::kNodes, subject,
            "class " + cls + ": the HCA link layer differs: NCCL takes another transport" + both, a,
            b);
      return;
    case Kind::kFabric:
      d.Add(kNodeFabric, Severity::kWarning, Group::kNodes, subject,
            "class " + cls + ": " + fact + " differs" + both, a, b);
      return;
    case Kind::kSoftware:
      d.Add(kNodeSoftware, Severity::kInfo, Group::kNodes, subject,
            "class " + cls + ": " + fact + " differs" + both, a, b);
      return;
  }
}

}  // namespace

std::string NodeClass(const k8s::Node& node, const Options& options) {
  std::vector<std::string> parts;
  if (options.class_labels.empty()) {
    std::string type = Label(node.labels, "node.kubernetes.io/instance-type");
    if (type.empty()) type = Label(node.labels, "beta.kubernetes.io/instance-type");
    if (!type.empty()) parts.push_back(type);
    std::string gpu = Label(node.labels, "nvidia.com/gpu.product");
    if (!gpu.empty()) parts.push_back(gpu);
  } else {
    for (const auto& key : options.class_labels) {
      std::string v = Label(node.labels, key);
      if (!v.empty()) parts.push_back(v);
    }
  }
  return parts.empty() ? "(no class label)" : Join(parts, "/");
}

k8s::StringMap NodeFacts(const k8s::Node& node, const audit::Options& side_options) {
  return CollectFacts(node, side_options).facts;
}

namespace {

NodeFactsOf CollectFacts(const k8s::Node& node, const audit::Options& side_options) {
  NodeFactsOf out;
  k8s::StringMap& f = out.facts;
  for (const auto& [key, name] : kNodeInfo) {
    auto it = node.node_info.find(key);
    if (it != node.node_info.end() && !it->second.empty()) f[name] = it->second;
  }
  for (const char* key : kFactLabels) {
    std::string v = Label(node.labels, key);
    if (!v.empty()) f[std::string("label ") + key] = v;
  }
  std::string driver = Version(node.labels, "nvidia.com/cuda.driver", "nvidia.com/cuda.driver");
  if (!driver.empty()) f["gpu driver"] = driver;
  std::string cuda = Version(node.labels, "nvidia.com/cuda.runtime", "nvidia.com/cuda.runtime");
  if (!cuda.empty()) f["cuda runtime"] = cuda;
  for (const auto& [res, qty] : node.allocatable) {
    if (audit::IsRdmaResource(res, side_options)) f["rdma " + res] = qty;
  }
  auto ann = node.annotations.find(k8s::kFabricFactsAnnotation);
  if (ann != node.annotations.end()) {
    auto facts = k8s::DecodeFabricFacts(ann->second);
    if (!facts.ok()) {
      out.unreadable = facts.status().message();
    } else {
      out.fabric = true;
      if (!facts->driver.empty()) f["mofed driver"] = facts->driver;
      if (!facts->hcas.empty()) {
        f["hca firmware"] = HcaSet(*facts, &k8s::HcaFacts::firmware);
        f["hca board"] = HcaSet(*facts, &k8s::HcaFacts::board_id);
        f["hca link layer"] = HcaSet(*facts, &k8s::HcaFacts::link_layer);
        f["hca rate"] = HcaSet(*facts, &k8s::HcaFacts::rate);
        f["hca mtu"] = HcaSet(*facts, &k8s::HcaFacts::mtu);
        f["hca count"] = std::to_string(facts->hcas.size());
      }
    }
  }
  return out;
}

}  // namespace

namespace internal {

void CompareNodes(Differ& d, const Options& options, const audit::Options& a_options,
                  const audit::Options& b_options) {
  for (const Side* s : {&d.a(), &d.b()}) {
    if (s->snapshot->nodes.empty()) {
      d.AddOneSide(kInputEmpty, Severity::kWarning, Group::kNodes, "nodes of " + d.Label(*s),
                   d.Label(*s) + " has no Node objects: node classes were not compared", *s,
                   nlohmann::json::object());
    }
  }
  if (d.a().snapshot->nodes.empty() || d.b().snapshot->nodes.empty()) return;
  auto a = Classify(d, d.a(), options, a_options);
  auto b = Classify(d, d.b(), options, b_options);
  EachKey(a, b, [&](const std::string& cls, const ClassFacts* ca, const ClassFacts* cb) {
    std::string subject = "class " + cls;
    // Node counts never count: the item records the class's presence only.
    d.Compare(Group::kNodes, subject, ca ? "present" : kAbsent, cb ? "present" : kAbsent);
    if (ca == nullptr || cb == nullptr) {
      const std::string& lacking = d.Lacking(ca == nullptr);
      d.Add(kClassMissing, Severity::kWarning, Group::kNodes, subject,
            "no node of class " + cls + " in " + lacking + ": what runs there was not tried in " +
                lacking,
            ca ? std::to_string(ca->nodes.size()) + " nodes" : kAbsent,
            cb ? std::to_string(cb->nodes.size()) + " nodes" : kAbsent);
      return;
    }
    EachKey(ca->majority, cb->majority,
            [&](const std::string& fact, const std::string* fa, const std::string* fb) {
              // Fabric facts only where both sides' nodes of the class publish them.
              if (IsFabricFact(fact) && !(ca->fabric && cb->fabric)) return;
              CompareFact(d, cls, fact, fa ? *fa : kAbsent, fb ? *fb : kAbsent);
            });
  });
}

}  // namespace internal
}  // namespace tocsin::drift
