// Decoders for the Kubernetes kinds tocsin reads (Node, Pod, DaemonSet, ConfigMap), field by
// field.
#include "k8s/json_fields.h"

namespace tocsin::k8s::internal {
namespace {

bool TocsinKey(std::string_view k) { return k.starts_with("tocsin.io/"); }
bool PodLabel(std::string_view k) {
  return k.starts_with("training.kubeflow.org/") || k.starts_with("jobset.sigs.k8s.io/") ||
         k.starts_with("batch.kubernetes.io/") || k == "job-name" || TocsinKey(k);
}
bool KeptAnnotation(std::string_view k) {
  return k == "k8s.v1.cni.cncf.io/networks" || k == "k8s.v1.cni.cncf.io/resourceName" ||
         k == kGkeInterfacesAnnotation || TocsinKey(k) || IsTopologyAnnotation(k);
}

}  // namespace

Err DecodeCondition(od::value v, std::vector<Condition>& out) {
  Condition c;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "type") return String(f, c.type);
    if (k == "status") return String(f, c.status);
    if (k == "reason") return String(f, c.reason);
    if (k == "message") return String(f, c.message);
    if (k == "lastTransitionTime") return Time(f, c.last_transition);
    return {};
  });
  if (!e) out.push_back(std::move(c));
  return e;
}

bool PodEnv(std::string_view k) { return k.starts_with("NCCL_") || k == "WORLD_SIZE"; }
bool TemplateEnv(std::string_view k) {
  return k.starts_with("NCCL_") || k.starts_with("UCX_") || k.starts_with("FI_");
}

Err DecodeContainer(od::value v, std::vector<Container>& out, std::vector<std::string>* args,
                    bool (*keep_env)(std::string_view), const std::string& prefix) {
  Container c;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, c.name);
    if (k == "image") return String(f, c.image);
    if ((k == "command" || k == "args") && args != nullptr) return AppendStrings(f, *args);
    if (k == "resources") {
      return Fields(f, [&](std::string_view rk, od::value rv) -> Err {
        if (rk == "requests") return Map(rv, c.requests, ExtendedResource);
        if (rk == "limits") return Map(rv, c.limits, ExtendedResource);
        return {};
      });
    }
    if (k == "env") return DecodeEnv(f, c.env, keep_env);
    if (k == "securityContext") {
      return Fields(f, [&](std::string_view sk, od::value sv) -> Err {
        if (sk == "privileged") return Bool(sv, c.privileged);
        if (sk == "capabilities") {
          return Fields(sv, [&](std::string_view ck, od::value cv) -> Err {
            return ck == "add" ? AppendStrings(cv, c.capabilities_add) : Err{};
          });
        }
        return {};
      });
    }
    return {};
  });
  c.name = prefix + c.name;
  if (!e) out.push_back(std::move(c));
  return e;
}


Err DecodeEnv(od::value v, StringMap& env, bool (*keep)(std::string_view)) {
  return Each(v, [&](od::value ev) -> Err {
    std::string name, value;
    Err ee = Fields(ev, [&](std::string_view ek, od::value evv) -> Err {
      if (ek == "name") return String(evv, name);
      if (ek == "value") return String(evv, value);
      return {};
    });
    if (!ee && keep(name)) env[name] = value;
    return ee;
  });
}

Err DecodeMetadata(od::value v, Metadata& m) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, m.name);
    if (k == "namespace") return String(f, m.ns);
    if (k == "uid") return String(f, m.uid);
    if (k == "labels") return m.all_labels ? Map(f, m.labels) : Map(f, m.labels, PodLabel);
    if (k == "annotations") return Map(f, m.annotations, KeptAnnotation);
    if (k == "creationTimestamp") return Time(f, m.created);
    if (k == "ownerReferences") {
      return Each(f, [&](od::value o) -> Err {
        OwnerRef r;
        Err e = Fields(o, [&](std::string_view ok, od::value ov) -> Err {
          if (ok == "kind") return String(ov, r.kind);
          if (ok == "name") return String(ov, r.name);
          if (ok == "uid") return String(ov, r.uid);
          return {};
        });
        if (!e) m.owners.push_back(std::move(r));
        return e;
      });
    }
    return {};
  });
}


namespace {

Err DecodeNodeSection(od::value v, std::string_view section, Node& n) {
  if (section == "spec") {
    return Fields(v, [&](std::string_view k, od::value f) -> Err {
      if (k == "unschedulable") return Bool(f, n.unschedulable);
      return {};
    });
  }
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "allocatable") return Map(f, n.allocatable);
    if (k == "nodeInfo") {
      return Map(f, n.node_info, [](std::string_view ik) {
        return ik != "machineID" && ik != "systemUUID" && ik != "bootID";
      });
    }
    if (k == "conditions") {
      return Each(f, [&](od::value c) { return DecodeCondition(c, n.conditions); });
    }
    return {};
  });
}

Err DecodeDaemonSetSection(od::value v, std::string_view section, DaemonSet& d) {
  if (section == "spec") {
    return Fields(v, [&](std::string_view k, od::value f) -> Err {
      if (k != "template") return {};
      return Fields(f, [&](std::string_view tk, od::value tv) -> Err {
        if (tk != "spec") return {};
        return Fields(tv, [&](std::string_view sk, od::value sv) -> Err {
          if (sk == "nodeSelector") return Map(sv, d.node_selector);
          if (sk == "affinity") {
            return Fields(sv, [&](std::string_view ak, od::value) -> Err {
              if (ak == "nodeAffinity") d.node_affinity = true;
              return {};
            });
          }
          if (sk == "containers") {
            std::vector<Container> cs;
            Err ce = Each(sv, [&](od::value c) { return DecodeContainer(c, cs, &d.args); });
            for (const auto& c : cs) d.images.push_back(c.image);
            return ce;
          }
          if (sk == "volumes") {
            return Each(sv, [&](od::value vol) -> Err {
              return Fields(vol, [&](std::string_view vk, od::value vv) -> Err {
                return vk == "configMap" ? AppendField(vv, "name", d.config_maps) : Err{};
              });
            });
          }
          return {};
        });
      });
    });
  }
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "desiredNumberScheduled") return Int(f, d.desired);
    if (k == "currentNumberScheduled") return Int(f, d.current);
    if (k == "numberReady") return Int(f, d.ready);
    if (k == "numberAvailable") return Int(f, d.available);
    if (k == "numberUnavailable") return Int(f, d.unavailable);
    if (k == "numberMisscheduled") return Int(f, d.misscheduled);
    return {};
  });
}

// One object; `kind` may come from the enclosing *List when the item lacks it.
}  // namespace

Err DecodeObject(od::object obj, std::string kind, Snapshot& out) {
  TRY_SJ(ReadKind(obj, kind), "kind");
  Metadata meta;
  meta.all_labels = kind != "Pod";
  Pod pod;
  Node node;
  DaemonSet ds;
  ConfigMap cm;
  ObjectRef job;
  NetworkAttachment nad;
  SriovPolicy sriov;
  NicClusterPolicy ncp;
  Workload workload;
  bool workload_kind = IsWorkloadKind(kind);
  for (auto field : obj) {
    std::string_view key;
    TRY_SJ(field.unescaped_key().get(key), "");
    od::value value;
    TRY_SJ(field.value().get(value), std::string(key));
    if (key == "metadata") {
      TRY_ERR(DecodeMetadata(value, meta), "metadata");
    } else if (key == "data" && kind == "ConfigMap") {
      TRY_ERR(Map(value, cm.data), "data");
    } else if (key == "spec" && IsJobKind(kind) && workload_kind) {
      // The audit's pod sets and drift's template both read a job's spec, and an on-demand value
      // is read once: the spec's text is parsed again for the template (a job's spec is small).
      od::object spec_object;
      TRY_SJ(value.get_object().get(spec_object), "spec");
      std::string_view raw;
      TRY_SJ(spec_object.raw_json().get(raw), "spec");
      simdjson::padded_string text(raw);
      od::parser parser;
      for (int pass = 0; pass < 2; ++pass) {
        od::document doc;
        TRY_SJ(parser.iterate(text).get(doc), "spec");
        od::value spec;
        TRY_SJ(doc.get_value().get(spec), "spec");
        if (pass == 0) {
          TRY_ERR(DecodeJobSection(spec, key, kind, job), "spec");
        } else {
          TRY_ERR(DecodeWorkloadSpec(spec, workload), "spec");
        }
      }
    } else if (key == "spec" || key == "status") {
      if (IsJobKind(kind)) TRY_ERR(DecodeJobSection(value, key, kind, job), std::string(key));
      if (kind == "Pod") TRY_ERR(DecodePod(value, key, pod), std::string(key));
      if (kind == "Node") TRY_ERR(DecodeNodeSection(value, key, node), std::string(key));
      if (kind == "DaemonSet") TRY_ERR(DecodeDaemonSetSection(value, key, ds), std::string(key));
      if (key == "spec") {
        if (kind == "NetworkAttachmentDefinition") {
          TRY_ERR(DecodeNetworkAttachmentSpec(value, nad), "spec");
        } else if (kind == "SriovNetworkNodePolicy") {
          TRY_ERR(DecodeSriovPolicySpec(value, sriov), "spec");
        } else if (kind == "NicClusterPolicy") {
          TRY_ERR(DecodeNicClusterPolicySpec(value, ncp), "spec");
        } else if (workload_kind) {
          TRY_ERR(DecodeWorkloadSpec(value, workload), "spec");
        }
      }
    }
  }
  if (kind == "Pod") {
    pod.ns = meta.ns;
    pod.name = meta.name;
    pod.uid = meta.uid;
    pod.labels = std::move(meta.labels);
    pod.annotations = std::move(meta.annotations);
    pod.created = meta.created;
    pod.owners = std::move(meta.owners);
    // Termination messages (up to 4 KiB each) are kept for tocsin's canaries only: a 100,000-pod
    // cluster's would not fit beside the rest.
    if (!pod.labels.count("tocsin.io/canary-round")) {
      for (auto& st : pod.statuses) std::string().swap(st.termination_message);
    }
    out.pods.push_back(std::move(pod));
  } else if (kind == "Node") {
    node.name = meta.name;
    node.uid = meta.uid;
    node.labels = std::move(meta.labels);
    node.annotations = std::move(meta.annotations);
    node.created = meta.created;
    out.nodes.push_back(std::move(node));
  } else if (kind == "DaemonSet") {
    ds.ns = meta.ns;
    ds.name = meta.name;
    ds.uid = meta.uid;
    ds.created = meta.created;
    out.daemonsets.push_back(std::move(ds));
  } else if (kind == "ConfigMap") {
    cm.ns = meta.ns;
    cm.name = meta.name;
    std::erase_if(cm.data, [](const auto& kv) {
      return kv.second.find("resourceList") == std::string::npos &&
             kv.second.find("configList") == std::string::npos;
    });
    out.configmaps.push_back(std::move(cm));
  } else if (kind == "NetworkAttachmentDefinition") {
    nad.ns = meta.ns;
    nad.name = meta.name;
    auto rn = meta.annotations.find("k8s.v1.cni.cncf.io/resourceName");
    if (rn != meta.annotations.end()) nad.resource_name = rn->second;
    out.networks.push_back(std::move(nad));
  } else if (kind == "SriovNetworkNodePolicy") {
    sriov.ns = meta.ns;
    sriov.name = meta.name;
    out.sriov_policies.push_back(std::move(sriov));
  } else if (kind == "NicClusterPolicy") {
    ncp.name = meta.name;
    out.nic_policies.push_back(std::move(ncp));
  } else {
    if (IsJobKind(kind)) {
      job.kind = kind;
      job.ns = meta.ns;
      job.name = meta.name;
      job.uid = meta.uid;
      job.owned = !meta.owners.empty();
      // The top object's topology annotations place every pod (JobSet's exclusive-topology).
      for (auto& set : job.pod_sets) {
        for (const auto& [k, v] : meta.annotations) {
          if (IsTopologyAnnotation(k)) set.pod.annotations.emplace(k, v);
        }
        set.pod.ns = meta.ns;
      }
      out.jobs.push_back(std::move(job));
    }
    if (workload_kind) {
      workload.kind = kind;
      workload.ns = meta.ns;
      workload.name = meta.name;
      workload.owned = !meta.owners.empty();
      out.workloads.push_back(std::move(workload));
    }
    out.other_kinds[kind.empty() ? "(no kind)" : kind]++;
  }
  return {};
}

error_code ReadKind(od::object& obj, std::string& kind) {
  auto field = obj.find_field_unordered("kind");
  error_code e = field.error();
  if (e == simdjson::SUCCESS) {
    std::string_view k;
    if (field.get_string().get(k) == simdjson::SUCCESS) kind = std::string(k);
  } else if (e != simdjson::NO_SUCH_FIELD) {
    return e;
  }
  return obj.reset().error();
}

std::string JsonError(error_code code) {
  switch (code) {
    case simdjson::INCORRECT_TYPE:
      return "wrong type";
    case simdjson::NO_SUCH_FIELD:
      return "missing";
    case simdjson::NUMBER_OUT_OF_RANGE:
      return "number out of range";
    case simdjson::INDEX_OUT_OF_BOUNDS:
      return "index out of range";
    case simdjson::TAPE_ERROR:
      return "malformed JSON (a missing or extra comma, brace or key)";
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "ends inside an object or array (truncated?)";
    case simdjson::DEPTH_ERROR:
      return "nested too deeply";
    case simdjson::EMPTY:
      return "empty: no JSON";
    case simdjson::TRAILING_CONTENT:
      return "text after the end of the JSON document";
    case simdjson::SCALAR_DOCUMENT_AS_VALUE:
      return "a lone value, not a JSON object";
    case simdjson::UTF8_ERROR:
      return "not valid UTF-8";
    case simdjson::UNCLOSED_STRING:
      return "a string is never closed";
    case simdjson::STRING_ERROR:
      return "malformed string";
    case simdjson::UNESCAPED_CHARS:
      return "a control character in a string is not escaped";
    case simdjson::NUMBER_ERROR:
      return "malformed number";
    case simdjson::T_ATOM_ERROR:
      return "malformed true";
    case simdjson::F_ATOM_ERROR:
      return "malformed false";
    case simdjson::N_ATOM_ERROR:
      return "malformed null";
    case simdjson::CAPACITY:
      return "document too large";
    case simdjson::MEMALLOC:
      return "out of memory";
    default:
      return "invalid JSON (" + std::string(simdjson::error_message(code)) + ")";
  }
}

Status ToStatus(const Err& e, const std::string& where) {
  std::string what = e.detail.empty() ? JsonError(e.code) : e.detail;
  return Status::ParseError(where + (e.path.empty() ? "" : ": field " + e.path) + ": " + what);
}

}  // namespace tocsin::k8s::internal
