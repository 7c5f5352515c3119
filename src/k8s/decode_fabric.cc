// Decoders for the kinds `tocsin diff` compares beyond the audit's: NetworkAttachmentDefinition,
// SriovNetworkNodePolicy, NicClusterPolicy and the workloads' pod templates (docs/FORMATS.md,
// "Fabric configuration").
#include "k8s/cni.h"
#include "k8s/json_fields.h"

namespace tocsin::k8s::internal {
namespace {

// Each operator component's config is kept up to this size (the plugins' own are a few hundred
// bytes); a longer one is cut and says so, so a hostile object cannot grow the snapshot.
constexpr size_t kMaxComponentConfig = 16 * 1024;

// A pod template ({metadata, spec}): its containers, names prefixed by `prefix`.
Err DecodePodTemplate(od::value tmpl, Workload& w, const std::string& prefix) {
  return Fields(tmpl, [&](std::string_view k, od::value spec) -> Err {
    if (k != "spec") return {};
    return Fields(spec, [&](std::string_view sk, od::value sv) -> Err {
      if (sk != "containers") return {};
      return Each(sv, [&](od::value c) {
        return DecodeContainer(c, w.containers, nullptr, TemplateEnv, prefix);
      });
    });
  });
}

// A JobTemplateSpec or a Job's spec ({template: PodTemplateSpec}).
Err DecodeJobSpec(od::value spec, Workload& w, const std::string& prefix) {
  return Fields(spec, [&](std::string_view k, od::value v) -> Err {
    return k == "template" ? DecodePodTemplate(v, w, prefix) : Err{};
  });
}

// {"Master": {replicas, template}, "Worker": {...}} (Kubeflow's *ReplicaSpecs).
Err DecodeReplicaSpecs(od::value specs, Workload& w) {
  return Fields(specs, [&](std::string_view replica, od::value rv) -> Err {
    std::string prefix = std::string(replica) + "/";
    return Fields(rv, [&](std::string_view k, od::value v) -> Err {
      return k == "template" ? DecodePodTemplate(v, w, prefix) : Err{};
    });
  });
}

Err Component(od::value v, const std::string& name, NicClusterPolicy& out) {
  OperatorComponent c;
  c.name = name;
  bool is_component = false;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    od::json_type t;
    TRY_SJ(f.type().get(t), "");
    if (t != od::json_type::string) return {};  // probes, upgradePolicy, env, ...
    if (k == "repository" || k == "image" || k == "version") is_component = true;
    if (k == "repository") return String(f, c.repository);
    if (k == "image") return String(f, c.image);
    if (k == "version") return String(f, c.version);
    if (k == "config") {
      Err ce = String(f, c.config);
      if (c.config.size() > kMaxComponentConfig) {
        c.config = "(config of " + std::to_string(c.config.size()) + " bytes, not kept)";
      }
      return ce;
    }
    return {};
  });
  if (!e && is_component) out.components.push_back(std::move(c));
  return e;
}

}  // namespace

Err DecodeNetworkAttachmentSpec(od::value spec, NetworkAttachment& out) {
  return Fields(spec, [&](std::string_view k, od::value f) -> Err {
    if (k != "config") return {};
    std::string text;
    Err e = String(f, text);
    if (e) return e;
    auto cni = ParseCniConfig(text);
    if (!cni.ok()) {
      out.config_error = cni.status().message();
      return {};
    }
    out.cni_name = cni->name;
    out.type = cni->type;
    out.master = cni->master;
    out.mtu = cni->mtu;
    out.ipam_type = cni->ipam_type;
    return {};
  });
}

Err DecodeSriovPolicySpec(od::value spec, SriovPolicy& out) {
  return Fields(spec, [&](std::string_view k, od::value f) -> Err {
    if (k == "resourceName") return String(f, out.resource_name);
    if (k == "deviceType") return String(f, out.device_type);
    if (k == "linkType") return String(f, out.link_type);
    if (k == "numVfs") return Int(f, out.num_vfs);
    if (k == "mtu") return Int(f, out.mtu);
    if (k == "priority") return Int(f, out.priority);
    if (k == "isRdma") return Bool(f, out.is_rdma);
    if (k == "nodeSelector") return Map(f, out.node_selector);
    if (k == "nicSelector") {
      return Fields(f, [&](std::string_view nk, od::value nv) -> Err {
        if (nk == "vendor") return String(nv, out.vendor);
        if (nk == "deviceID") return String(nv, out.device_id);
        if (nk == "pfNames") return AppendStrings(nv, out.pf_names);
        if (nk == "rootDevices") return AppendStrings(nv, out.root_devices);
        return {};
      });
    }
    return {};
  });
}

Err DecodeNicClusterPolicySpec(od::value spec, NicClusterPolicy& out) {
  return Fields(spec, [&](std::string_view k, od::value f) -> Err {
    od::json_type t;
    TRY_SJ(f.type().get(t), "");
    if (t != od::json_type::object) return {};
    if (k == "secondaryNetwork") {
      return Fields(f, [&](std::string_view sk, od::value sv) -> Err {
        od::json_type st;
        TRY_SJ(sv.type().get(st), "");
        if (st != od::json_type::object) return {};
        return Component(sv, "secondaryNetwork." + std::string(sk), out);
      });
    }
    return Component(f, std::string(k), out);
  });
}

Err DecodeWorkloadSpec(od::value spec, Workload& w) {
  return Fields(spec, [&](std::string_view k, od::value f) -> Err {
    if (k == "template") return DecodePodTemplate(f, w, "");  // Job
    if (k == "jobTemplate") {                                 // CronJob
      return Fields(f, [&](std::string_view jk, od::value jv) -> Err {
        return jk == "spec" ? DecodeJobSpec(jv, w, "") : Err{};
      });
    }
    if (k.size() > 12 && k.substr(k.size() - 12) == "ReplicaSpecs") {  // Kubeflow
      return DecodeReplicaSpecs(f, w);
    }
    if (k == "replicatedJobs") {  // JobSet
      return Each(f, [&](od::value rj) -> Err {
        std::string name;
        // "name" may come after "template": the containers are renamed once both are read.
        size_t first = w.containers.size();
        Err e = Fields(rj, [&](std::string_view rk, od::value rv) -> Err {
          if (rk == "name") return String(rv, name);
          if (rk != "template") return {};
          return Fields(rv, [&](std::string_view tk, od::value tv) -> Err {
            return tk == "spec" ? DecodeJobSpec(tv, w, "") : Err{};
          });
        });
        for (size_t i = first; i < w.containers.size(); ++i) {
          w.containers[i].name = name + "/" + w.containers[i].name;
        }
        return e;
      });
    }
    return {};
  });
}

}  // namespace tocsin::k8s::internal
