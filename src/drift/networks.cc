// Network attachments matched by name (what pods ask for), SR-IOV node policies by the resource
// they create.
#include <cctype>
#include <set>

#include "base/strings.h"
#include "drift/catalog.h"
#include "drift/differ.h"

namespace tocsin::drift::internal {
namespace {

// By name; a name in several namespaces of one side: the first namespace's (sorted).
std::map<std::string, const k8s::NetworkAttachment*> Attachments(const Side& side) {
  std::map<std::string, const k8s::NetworkAttachment*> out;
  for (const auto& n : side.snapshot->networks) {
    auto [it, added] = out.emplace(n.name, &n);
    if (!added && n.ns < it->second->ns) it->second = &n;
  }
  return out;
}

// linkType is "eth"/"ETH", "ib"/"IB" in the operator's examples: compared without case.
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Or(const std::string& s) { return s.empty() ? kAbsent : s; }

void CompareAttachment(Differ& d, const std::string& name, const k8s::NetworkAttachment& a,
                       const k8s::NetworkAttachment& b) {
  std::string base = "network " + name;
  nlohmann::json where = {{"object_a", a.ns + "/" + a.name}, {"object_b", b.ns + "/" + b.name}};
  if (!a.config_error.empty() || !b.config_error.empty()) {
    std::string ea = a.config_error.empty() ? "readable" : a.config_error;
    std::string eb = b.config_error.empty() ? "readable" : b.config_error;
    if (d.Compare(Group::kNetworks, base + ": config", ea, eb)) {
      d.Add(kNetworkAttachment, Severity::kError, Group::kNetworks, base + ": config",
            "the CNI config of " + name + " cannot be read on one side, so it cannot be compared",
            ea, eb, where);
    }
    return;
  }
  struct Field {
    const char* what;
    std::string a, b;
    Severity severity;
  };
  for (const Field& f : {Field{"type", a.type, b.type, Severity::kError},
                         Field{"master", a.master, b.master, Severity::kError},
                         Field{"mtu", a.mtu, b.mtu, Severity::kError},
                         Field{"resource", a.resource_name, b.resource_name, Severity::kError},
                         Field{"ipam", a.ipam_type, b.ipam_type, Severity::kWarning}}) {
    std::string subject = base + ": " + f.what;
    if (!d.Compare(Group::kNetworks, subject, Or(f.a), Or(f.b))) continue;
    d.Add(kNetworkAttachment, f.severity, Group::kNetworks, subject,
          "network attachment " + name + ": " + f.what + " " + Or(f.a) + " in " + d.a().name +
              ", " + Or(f.b) + " in " + d.b().name +
              (f.severity == Severity::kError ? ": pods attached to it get another interface" : ""),
          Or(f.a), Or(f.b), where);
  }
}

void CompareAttachments(Differ& d) {
  using Nad = const k8s::NetworkAttachment*;
  EachKey(Attachments(d.a()), Attachments(d.b()),
          [&](const std::string& name, const Nad* pa, const Nad* pb) {
            std::string subject = "network " + name;
            d.Compare(Group::kNetworks, subject, pa ? "present" : kAbsent,
                      pb ? "present" : kAbsent);
            if (pa == nullptr || pb == nullptr) {
              const std::string& lacking = d.Lacking(pa == nullptr);
              d.Add(kNetworkAttachment, Severity::kError, Group::kNetworks, subject,
                    "no network attachment " + name + " in " + lacking + ": pods asking for " +
                        name + " will not start in " + lacking,
                    pa ? (*pa)->ns + "/" + name : kAbsent, pb ? (*pb)->ns + "/" + name : kAbsent);
              return;
            }
            CompareAttachment(d, name, **pa, **pb);
          });
}

std::map<std::string, const k8s::SriovPolicy*> Policies(const Side& side) {
  std::map<std::string, const k8s::SriovPolicy*> out;
  for (const auto& p : side.snapshot->sriov_policies) {
    auto [it, added] = out.emplace(p.resource_name, &p);
    if (!added && p.name < it->second->name) it->second = &p;
  }
  return out;
}

std::string Selector(const k8s::SriovPolicy& p) {
  std::vector<std::string> parts;
  if (!p.vendor.empty()) parts.push_back("vendor=" + p.vendor);
  if (!p.device_id.empty()) parts.push_back("deviceID=" + p.device_id);
  if (!p.pf_names.empty()) parts.push_back("pfNames=" + Join(p.pf_names, ","));
  if (!p.root_devices.empty()) parts.push_back("rootDevices=" + Join(p.root_devices, ","));
  return Join(parts, " ");
}

void ComparePolicy(Differ& d, const std::string& res, const k8s::SriovPolicy& pa,
                   const k8s::SriovPolicy& pb) {
  struct Field {
    const char* what;
    std::string a, b;
    Severity severity;
  };
  auto yes = [](bool v) { return std::string(v ? "true" : "false"); };
  for (const Field& f :
       {Field{"numVfs", std::to_string(pa.num_vfs), std::to_string(pb.num_vfs), Severity::kError},
        Field{"mtu", std::to_string(pa.mtu), std::to_string(pb.mtu), Severity::kError},
        Field{"linkType", Lower(pa.link_type), Lower(pb.link_type), Severity::kError},
        Field{"isRdma", yes(pa.is_rdma), yes(pb.is_rdma), Severity::kError},
        Field{"deviceType", pa.device_type, pb.device_type, Severity::kError},
        Field{"nicSelector", Selector(pa), Selector(pb), Severity::kWarning}}) {
    std::string item = "sriov policy " + res + ": " + f.what;
    if (!d.Compare(Group::kNetworks, item, Or(f.a), Or(f.b))) continue;
    d.Add(kSriovPolicy, f.severity, Group::kNetworks, item,
          "the SR-IOV policy behind " + res + ": " + f.what + " " + Or(f.a) + " in " + d.a().name +
              ", " + Or(f.b) + " in " + d.b().name,
          Or(f.a), Or(f.b),
          {{"object_a", pa.ns + "/" + pa.name}, {"object_b", pb.ns + "/" + pb.name}});
  }
}

void ComparePolicies(Differ& d) {
  using Policy = const k8s::SriovPolicy*;
  EachKey(Policies(d.a()), Policies(d.b()),
          [&](const std::string& res, const Policy* pa, const Policy* pb) {
            std::string subject = "sriov policy " + res;
            d.Compare(Group::kNetworks, subject, pa ? "present" : kAbsent,
                      pb ? "present" : kAbsent);
            if (pa != nullptr && pb != nullptr) return ComparePolicy(d, res, **pa, **pb);
            const std::string& lacking = d.Lacking(pa == nullptr);
            d.Add(kRdmaResource, Severity::kError, Group::kNetworks, subject,
                  "no SR-IOV node policy creates " + res + " in " + lacking + ": jobs asking for " +
                      res + " will not schedule in " + lacking,
                  pa ? (*pa)->ns + "/" + (*pa)->name : kAbsent,
                  pb ? (*pb)->ns + "/" + (*pb)->name : kAbsent);
          });
}

}  // namespace

void CompareNetworks(Differ& d) {
  CompareAttachments(d);
  ComparePolicies(d);
}

}  // namespace tocsin::drift::internal
