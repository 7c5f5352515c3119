// Workload templates matched by kind and name (namespaces never count: staging and production
// often differ only there): their NCCL_*, UCX_*, FI_* env and extended-resource requests.
#include <set>

#include "base/strings.h"
#include "drift/catalog.h"
#include "drift/differ.h"

namespace tocsin::drift::internal {
namespace {

// The variables whose difference changes the transport NCCL takes.
constexpr const char* kNcclFabric[] = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET_PLUGIN",
                                       "NCCL_NET", "NCCL_IB_DISABLE"};

struct Template {
  const k8s::Workload* workload = nullptr;
  k8s::StringMap env;        // variable -> value(s) across the containers
  k8s::StringMap resources;  // "requests rdma/x" -> quantity
};

// Values that differ between containers are joined with " | " (sorted).
void Merge(k8s::StringMap& into, const std::string& key, const std::string& value) {
  auto [it, added] = into.emplace(key, value);
  if (added || it->second == value) return;
  auto parts = Split(it->second, '|');
  std::set<std::string> values;
  for (auto p : parts) values.insert(std::string(Trim(p)));
  values.insert(value);
  it->second = Join(std::vector<std::string>(values.begin(), values.end()), " | ");
}

std::map<std::string, Template> Templates(const Side& side) {
  std::map<std::string, Template> out;
  for (const auto& w : side.snapshot->workloads) {
    if (w.owned) continue;
    Template& t = out[w.kind + "/" + w.name];
    if (t.workload != nullptr) continue;  // the same name in another namespace: the first
    t.workload = &w;
    for (const auto& c : w.containers) {
      for (const auto& [k, v] : c.env) Merge(t.env, k, v);
      for (const auto& [k, v] : c.requests) Merge(t.resources, "requests " + k, v);
      for (const auto& [k, v] : c.limits) Merge(t.resources, "limits " + k, v);
    }
  }
  return out;
}

bool IsNcclFabric(const std::string& var) {
  for (const char* v : kNcclFabric) {
    if (var == v) return true;
  }
  return false;
}

// NCCL_IB_DISABLE=1 or NCCL_NET=Socket: the job runs on sockets.
bool DisablesFabric(const std::string& var, const std::string& value) {
  if (var == "NCCL_IB_DISABLE") return value == "1" || value == "true";
  if (var == "NCCL_NET") return value == "Socket" || value == "socket";
  return false;
}

std::string Ns(const Template& t) { return t.workload->ns + "/" + t.workload->name; }

void CompareEnv(Differ& d, const std::string& key, const std::string& var, const std::string& va,
                const std::string& vb, const nlohmann::json& where) {
  std::string subject = "template " + key + ": " + var;
  if (!d.Compare(Group::kTemplates, subject, va, vb)) return;
  std::string both = " (" + d.a().name + ": " + va + ", " + d.b().name + ": " + vb + ")";
  if (!IsNcclFabric(var)) {
    d.Add(kTemplateEnv, Severity::kInfo, Group::kTemplates, subject,
          key + ": " + var + " differs" + both, va, vb, where);
    return;
  }
  bool da = DisablesFabric(var, va), db = DisablesFabric(var, vb);
  if (da == db) {
    d.Add(kTemplateNccl, Severity::kWarning, Group::kTemplates, subject,
          key + ": " + var + " differs" + both, va, vb, where);
    return;
  }
  const std::string& sockets = da ? d.a().name : d.b().name;
  d.Add(kTemplateNccl, Severity::kError, Group::kTemplates, subject,
        key + " runs NCCL on sockets in " + sockets + " only (" + var + "): its " + sockets +
            " runs do not test the fabric" + both,
        va, vb, where);
}

void Compare(Differ& d, const std::string& key, const Template& a, const Template& b) {
  nlohmann::json where = {{"object_a", Ns(a)}, {"object_b", Ns(b)}};
  EachKey(a.env, b.env, [&](const std::string& var, const std::string* va, const std::string* vb) {
    CompareEnv(d, key, var, va ? *va : kAbsent, vb ? *vb : kAbsent, where);
  });
  EachKey(a.resources, b.resources,
          [&](const std::string& r, const std::string* pa, const std::string* pb) {
            std::string va = pa ? *pa : kAbsent;
            std::string vb = pb ? *pb : kAbsent;
            std::string subject = "template " + key + ": " + r;
            if (!d.Compare(Group::kTemplates, subject, va, vb)) return;
            d.Add(kTemplateResources, Severity::kWarning, Group::kTemplates, subject,
                  key + ": " + r + " " + va + " in " + d.a().name + ", " + vb + " in " + d.b().name,
                  va, vb, where);
          });
}

}  // namespace

void CompareTemplates(Differ& d) {
  EachKey(Templates(d.a()), Templates(d.b()),
          [&](const std::string& key, const Template* ta, const Template* tb) {
            std::string subject = "template " + key;
            d.Compare(Group::kTemplates, subject, ta ? "present" : kAbsent,
                      tb ? "present" : kAbsent);
            if (ta != nullptr && tb != nullptr) return Compare(d, key, *ta, *tb);
            d.Add(kTemplateMissing, Severity::kInfo, Group::kTemplates, subject,
                  key + " is not in " + d.Lacking(ta == nullptr), ta ? Ns(*ta) : kAbsent,
                  tb ? Ns(*tb) : kAbsent);
          });
}

}  // namespace tocsin::drift::internal
