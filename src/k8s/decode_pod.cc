// Decoders for a Pod's spec and status (also a pod template's spec): containers, their statuses,
// the topology keys of its placement, volumes.
#include "k8s/json_fields.h"

namespace tocsin::k8s::internal {
namespace {

// A ContainerStateTerminated; `message` may be null (not kept).
Err DecodeTerminated(od::value v, std::string& reason, std::optional<int64_t>& exit_code,
                     std::optional<TimePoint>& finished, std::string* message) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "reason") return String(f, reason);
    if (k == "message" && message != nullptr) return String(f, *message);
    if (k == "finishedAt") return Time(f, finished);
    if (k == "exitCode") {
      int64_t code = 0;
      Err ce = Int(f, code);
      if (!ce) exit_code = code;
      return ce;
    }
    return {};
  });
}

Err DecodeContainerStatus(od::value v, std::vector<ContainerStatus>& out) {
  ContainerStatus s;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, s.name);
    if (k == "image") return String(f, s.image);
    if (k == "restartCount") return Int(f, s.restart_count);
    if (k == "ready") return Bool(f, s.ready);
    if (k == "state") {
      return Fields(f, [&](std::string_view sk, od::value sv) -> Err {
        if (sk == "terminated") {
          return DecodeTerminated(sv, s.terminated_reason, s.exit_code, s.finished,
                                  &s.termination_message);
        }
        if (sk != "waiting") return {};
        return Fields(sv, [&](std::string_view wk, od::value wv) -> Err {
          if (wk == "reason") return String(wv, s.waiting_reason);
          if (wk == "message") return String(wv, s.waiting_message);
          return {};
        });
      });
    }
    if (k == "lastState") {
      return Fields(f, [&](std::string_view sk, od::value sv) -> Err {
        if (sk != "terminated") return {};
        return DecodeTerminated(sv, s.last_terminated_reason, s.last_exit_code,
                                s.last_terminated_finished, nullptr);
      });
    }
    return {};
  });
  if (!e) out.push_back(std::move(s));
  return e;
}

// The label keys that required node affinity (matchExpressions) and pod affinity (topologyKey,
// required or preferred) name.
Err DecodeAffinityKeys(od::value v, std::vector<std::string>& keys) {
  auto pod_term = [&](od::value term) { return AppendField(term, "topologyKey", keys); };
  return Fields(v, [&](std::string_view k, od::value a) -> Err {
    if (k == "nodeAffinity") {
      return Fields(a, [&](std::string_view nk, od::value nv) -> Err {
        if (nk != "requiredDuringSchedulingIgnoredDuringExecution") return {};
        return Fields(nv, [&](std::string_view tk, od::value terms) -> Err {
          if (tk != "nodeSelectorTerms") return {};
          return Each(terms, [&](od::value term) -> Err {
            return Fields(term, [&](std::string_view ek, od::value exprs) -> Err {
              if (ek != "matchExpressions") return {};
              return Each(exprs, [&](od::value e) { return AppendField(e, "key", keys); });
            });
          });
        });
      });
    }
    if (k != "podAffinity") return {};
    return Fields(a, [&](std::string_view pk, od::value pv) -> Err {
      if (pk == "requiredDuringSchedulingIgnoredDuringExecution") return Each(pv, pod_term);
      if (pk != "preferredDuringSchedulingIgnoredDuringExecution") return {};
      return Each(pv, [&](od::value w) -> Err {
        return Fields(w, [&](std::string_view wk, od::value term) -> Err {
          return wk == "podAffinityTerm" ? pod_term(term) : Err{};
        });
      });
    });
  });
}

}  // namespace

Err DecodePod(od::value spec_or_status, std::string_view section, Pod& p) {
  if (section == "spec") {
    return Fields(spec_or_status, [&](std::string_view k, od::value f) -> Err {
      if (k == "nodeName") return String(f, p.node_name);
      if (k == "nodeSelector") {
        StringMap selector;
        Err e = Map(f, selector);
        for (const auto& [key, value] : selector) p.topology_keys.push_back(key);
        return e;
      }
      if (k == "affinity") return DecodeAffinityKeys(f, p.topology_keys);
      if (k == "topologySpreadConstraints") {
        return Each(f, [&](od::value c) { return AppendField(c, "topologyKey", p.topology_keys); });
      }
      if (k == "containers") {
        return Each(f, [&](od::value c) { return DecodeContainer(c, p.containers); });
      }
      if (k == "volumes") {
        return Each(f, [&](od::value vol) -> Err {
          std::string name;
          return Fields(vol, [&](std::string_view vk, od::value vv) -> Err {
            if (vk == "name") return String(vv, name);
            if (vk == "hostPath") return AppendField(vv, "path", p.host_paths);
            if (vk == "persistentVolumeClaim" || vk == "nfs" || vk == "csi" || vk == "cephfs" ||
                vk == "glusterfs" || vk == "ephemeral") {
              p.shared_volumes.push_back(name.empty() ? std::string(vk) : name);
            }
            return {};
          });
        });
      }
      return {};
    });
  }
  return Fields(spec_or_status, [&](std::string_view k, od::value f) -> Err {
    if (k == "phase") return String(f, p.phase);
    if (k == "reason") return String(f, p.reason);
    if (k == "message") return String(f, p.message);
    if (k == "podIP") return String(f, p.pod_ip);
    if (k == "conditions") {
      return Each(f, [&](od::value c) { return DecodeCondition(c, p.conditions); });
    }
    if (k == "containerStatuses") {
      return Each(f, [&](od::value c) { return DecodeContainerStatus(c, p.statuses); });
    }
    return {};
  });
}

}  // namespace tocsin::k8s::internal
