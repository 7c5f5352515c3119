// The device plugins matched by role (the plugin whatever its DaemonSet's name), their images,
// the RDMA pools their configs declare, and the network operator's components.
#include <set>

#include "base/strings.h"
#include "drift/catalog.h"
#include "drift/differ.h"

namespace tocsin::drift::internal {
namespace {

// "nvcr.io/nvidia/cloud-native/k8s-rdma-shared-dev-plugin:v1.5.1" -> name
// "k8s-rdma-shared-dev-plugin", version "v1.5.1" (a digest when pinned by one). The registry
// and path never count: mirrors are common.
struct ImageRef {
  std::string name, version;
};

ImageRef ParseImage(const std::string& image) {
  std::string_view s = image;
  std::string version;
  if (size_t at = s.find('@'); at != std::string_view::npos) {
    version = std::string(s.substr(at + 1));
    s = s.substr(0, at);
  }
  size_t slash = s.rfind('/');
  size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    if (version.empty()) version = std::string(s.substr(colon + 1));
    s = s.substr(0, colon);
  }
  if (slash != std::string_view::npos) s = s.substr(slash + 1);
  return {std::string(s), version.empty() ? "latest" : version};
}

// Role -> the images' versions, per side.
std::map<std::string, std::string> Plugins(const Side& side, const audit::Options& options) {
  std::map<std::string, std::string> out;
  for (const auto& ds : side.snapshot->daemonsets) {
    if (!audit::IsDevicePlugin(ds, options) || ds.images.empty()) continue;
    ImageRef ref = ParseImage(ds.images[0]);
    std::vector<std::string> versions;
    for (const auto& image : ds.images) versions.push_back(ParseImage(image).version);
    out.emplace(ref.name, Join(versions, ","));
  }
  return out;
}

// "rdmaHcaMax" of a pool's compact JSON ("" when it has none): the resource's count per node.
std::string HcaMax(const std::string& pool) {
  auto j = nlohmann::json::parse(pool, nullptr, false);
  if (!j.is_object() || !j.contains("rdmaHcaMax")) return "";
  return j["rdmaHcaMax"].dump();
}

std::string WithoutCount(const std::string& pool) {
  auto j = nlohmann::json::parse(pool, nullptr, false);
  if (!j.is_object()) return pool;
  j.erase("rdmaHcaMax");
  return j.dump();
}

void ComparePools(Differ& d, const audit::Options& ao, const audit::Options& bo) {
  nlohmann::json sources = {{"config_a", ao.plugin_config.sources},
                            {"config_b", bo.plugin_config.sources}};
  EachKey(ao.plugin_config.pools, bo.plugin_config.pools,
          [&](const std::string& res, const std::string* pa, const std::string* pb) {
            std::string subject = "pool " + res;
            std::string a = pa ? "declared" : kAbsent;
            std::string b = pb ? "declared" : kAbsent;
            if (d.Compare(Group::kDevicePlugin, subject, a, b)) {
              const std::string& lacking = d.Lacking(pa == nullptr);
              d.Add(kRdmaResource, Severity::kError, Group::kDevicePlugin, subject,
                    "the device plugin config of " + lacking + " declares no " + res +
                        ": jobs asking for " + res + " will not schedule in " + lacking,
                    a, b, sources);
              return;
            }
            std::string ca = HcaMax(*pa), cb = HcaMax(*pb);
            if (d.Compare(Group::kDevicePlugin, subject + ": rdmaHcaMax", ca, cb)) {
              d.Add(kRdmaResource, Severity::kError, Group::kDevicePlugin, subject + ": rdmaHcaMax",
                    res + " is shared by at most " + (ca.empty() ? kAbsent : ca) +
                        " pods per HCA in " + d.a().name + " and " + (cb.empty() ? kAbsent : cb) +
                        " in " + d.b().name + ": jobs sized for one will not schedule in the other",
                    ca, cb, sources);
            }
            std::string sa = WithoutCount(*pa), sb = WithoutCount(*pb);
            if (d.Compare(Group::kDevicePlugin, subject + ": selectors", sa, sb)) {
              d.Add(kPluginConfig, Severity::kWarning, Group::kDevicePlugin,
                    subject + ": selectors",
                    "the devices behind " + res + " are selected differently (" + d.a().name +
                        ": " + sa + ", " + d.b().name + ": " + sb + ")",
                    sa, sb, sources);
            }
          });
}

// component name -> "image:version" of every NicClusterPolicy on a side.
std::map<std::string, std::string> Components(const Side& side) {
  std::map<std::string, std::string> out;
  for (const auto& p : side.snapshot->nic_policies) {
    for (const auto& c : p.components) {
      out.emplace(c.name, ParseImage(c.image).name + ":" + c.version);
    }
  }
  return out;
}

void CompareComponents(Differ& d) {
  auto a = Components(d.a());
  auto b = Components(d.b());
  EachKey(a, b, [&](const std::string& name, const std::string* pa, const std::string* pb) {
    std::string va = pa ? *pa : kAbsent;
    std::string vb = pb ? *pb : kAbsent;
    std::string subject = "NicClusterPolicy " + name;
    if (!d.Compare(Group::kDevicePlugin, subject, va, vb)) return;
    std::string both = " (" + d.a().name + ": " + va + ", " + d.b().name + ": " + vb + ")";
    if (name == "ofedDriver") {
      std::string ma = Major(va.substr(va.find(':') + 1), '-');
      std::string mb = Major(vb.substr(vb.find(':') + 1), '-');
      bool major = ma != mb;
      d.Add(kNodeDriver, major ? Severity::kWarning : Severity::kInfo, Group::kDevicePlugin,
            subject,
            std::string("the MOFED/DOCA driver ") + (major ? "major version" : "version") +
                " the network operator installs differs" + both,
            va, vb);
    } else {
      d.Add(kPluginImage, Severity::kWarning, Group::kDevicePlugin, subject,
            "the network operator's " + name + " differs" + both, va, vb);
    }
  });
}

}  // namespace

void ComparePlugins(Differ& d, const audit::Options& a_options, const audit::Options& b_options) {
  for (const Side* s : {&d.a(), &d.b()}) {
    if (s->snapshot->daemonsets.empty()) {
      d.AddOneSide(kInputEmpty, Severity::kWarning, Group::kDevicePlugin,
                   "daemonsets of " + d.Label(*s),
                   d.Label(*s) +
                       " has no DaemonSet objects: device plugins and their pools were not "
                       "compared",
                   *s, nlohmann::json::object());
    }
  }
  // The pools come from the plugins' ConfigMaps: without a side's DaemonSets, unknown.
  if (!d.a().snapshot->daemonsets.empty() && !d.b().snapshot->daemonsets.empty()) {
    EachKey(Plugins(d.a(), a_options), Plugins(d.b(), b_options),
            [&](const std::string& role, const std::string* pa, const std::string* pb) {
              std::string va = pa ? *pa : kAbsent;
              std::string vb = pb ? *pb : kAbsent;
              std::string subject = "device plugin " + role;
              if (!d.Compare(Group::kDevicePlugin, subject, va, vb)) return;
              if (pa == nullptr || pb == nullptr) {
                const std::string& lacking = d.Lacking(pa == nullptr);
                d.Add(kPluginMissing, Severity::kError, Group::kDevicePlugin, subject,
                      "no " + role + " DaemonSet in " + lacking +
                          ": jobs asking for its resources will not schedule in " + lacking,
                      va, vb);
              } else {
                d.Add(
                    kPluginImage, Severity::kWarning, Group::kDevicePlugin, subject,
                    role + " runs " + va + " in " + d.a().name + " and " + vb + " in " + d.b().name,
                    va, vb);
              }
            });
    ComparePools(d, a_options, b_options);
  }
  CompareComponents(d);
}

}  // namespace tocsin::drift::internal
