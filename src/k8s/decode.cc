#include "k8s/decode.h"

#include <simdjson.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/strings.h"

namespace tocsin::k8s {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// Decoding errors carry the JSON path of the field that failed.
struct Err {
  error_code code = simdjson::SUCCESS;
  std::string path;
  std::string detail;
  explicit operator bool() const { return code != simdjson::SUCCESS || !detail.empty(); }
};

#define TRY_SJ(expr, where)              \
  do {                                   \
    error_code _e = (expr);              \
    if (_e) return Err{_e, (where), ""}; \
  } while (0)
#define TRY_ERR(expr, where)                        \
  do {                                              \
    Err _e = (expr);                                \
    if (_e) {                                       \
      _e.path = std::string(where) + "." + _e.path; \
      return _e;                                    \
    }                                               \
  } while (0)

bool IsNull(od::value& v) {
  od::json_type t;
  return !v.type().get(t) && t == od::json_type::null;
}

Err String(od::value v, std::string& out) {
  if (IsNull(v)) return {};
  std::string_view s;
  TRY_SJ(v.get_string().get(s), "");
  out.assign(s);
  return {};
}

Err Int(od::value v, int64_t& out) {
  if (IsNull(v)) return {};
  TRY_SJ(v.get_int64().get(out), "");
  return {};
}

Err Bool(od::value v, bool& out) {
  if (IsNull(v)) return {};
  TRY_SJ(v.get_bool().get(out), "");
  return {};
}

Err Time(od::value v, std::optional<TimePoint>& out) {
  std::string s;
  Err e = String(v, s);
  if (e) return e;
  if (s.empty()) return {};
  out = ParseRfc3339(s);
  if (!out) return {simdjson::SUCCESS, "", "not an RFC 3339 time: " + Quote(s)};
  return {};
}

bool KeepAll(std::string_view) { return true; }

// A JSON object of strings (labels, annotations, nodeSelector) or of quantities (allocatable);
// only keys that `keep` accepts are stored.
template <typename Keep = bool (*)(std::string_view)>
Err Map(od::value v, StringMap& out, Keep keep = KeepAll) {
  if (IsNull(v)) return {};
  od::object obj;
  TRY_SJ(v.get_object().get(obj), "");
  for (auto field : obj) {
    std::string_view key;
    TRY_SJ(field.unescaped_key().get(key), "");
    if (!keep(key)) continue;
    od::value value;
    TRY_SJ(field.value().get(value), std::string(key));
    od::json_type t;
    TRY_SJ(value.type().get(t), std::string(key));
    if (t == od::json_type::string) {
      std::string_view s;
      TRY_SJ(value.get_string().get(s), std::string(key));
      out[std::string(key)] = std::string(s);
    } else {
      out[std::string(key)] = std::string(Trim(value.raw_json_token()));
    }
  }
  return {};
}

// Calls fn(value) for every element of an array (a null array is empty).
template <typename Fn>
Err Each(od::value v, Fn fn) {
  if (IsNull(v)) return {};
  od::array arr;
  TRY_SJ(v.get_array().get(arr), "");
  size_t i = 0;
  for (auto element : arr) {
    od::value item;
    TRY_SJ(element.get(item), "[" + std::to_string(i) + "]");
    Err e = fn(item);
    if (e) {
      e.path = "[" + std::to_string(i) + "]" + (e.path.empty() ? "" : "." + e.path);
      return e;
    }
    ++i;
  }
  return {};
}

// Calls fn(key, value) for every field of an object.
template <typename Fn>
Err Fields(od::value v, Fn fn) {
  if (IsNull(v)) return {};
  od::object obj;
  TRY_SJ(v.get_object().get(obj), "");
  for (auto field : obj) {
    std::string_view key;
    TRY_SJ(field.unescaped_key().get(key), "");
    od::value value;
    TRY_SJ(field.value().get(value), std::string(key));
    Err e = fn(key, value);
    if (e) {
      e.path = std::string(key) + (e.path.empty() ? "" : "." + e.path);
      return e;
    }
  }
  return {};
}

bool JobLabel(std::string_view k) {
  return k.rfind("training.kubeflow.org/", 0) == 0 || k.rfind("jobset.sigs.k8s.io/", 0) == 0 ||
         k.rfind("batch.kubernetes.io/", 0) == 0 || k == "job-name";
}
bool NetworkAnnotation(std::string_view k) { return k == "k8s.v1.cni.cncf.io/networks"; }
bool ExtendedResource(std::string_view k) { return k.find('/') != std::string_view::npos; }
bool InterestingEnv(std::string_view k) { return k.rfind("NCCL_", 0) == 0 || k == "WORLD_SIZE"; }

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

struct Metadata {
  bool all_labels = true;  // false for pods: job-grouping labels only
  std::string ns, name, uid;
  StringMap labels, annotations;
  std::optional<TimePoint> created;
  std::vector<OwnerRef> owners;
};

Err DecodeMetadata(od::value v, Metadata& m) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, m.name);
    if (k == "namespace") return String(f, m.ns);
    if (k == "uid") return String(f, m.uid);
    if (k == "labels") return m.all_labels ? Map(f, m.labels) : Map(f, m.labels, JobLabel);
    if (k == "annotations") return Map(f, m.annotations, NetworkAnnotation);
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

Err DecodeContainer(od::value v, std::vector<Container>& out) {
  Container c;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, c.name);
    if (k == "image") return String(f, c.image);
    if (k == "resources") {
      return Fields(f, [&](std::string_view rk, od::value rv) -> Err {
        if (rk == "requests") return Map(rv, c.requests, ExtendedResource);
        if (rk == "limits") return Map(rv, c.limits, ExtendedResource);
        return {};
      });
    }
    if (k == "env") {
      return Each(f, [&](od::value ev) -> Err {
        std::string name, value;
        Err ee = Fields(ev, [&](std::string_view ek, od::value evv) -> Err {
          if (ek == "name") return String(evv, name);
          if (ek == "value") return String(evv, value);
          return {};
        });
        if (!ee && InterestingEnv(name)) c.env[name] = value;
        return ee;
      });
    }
    if (k == "securityContext") {
      return Fields(f, [&](std::string_view sk, od::value sv) -> Err {
        if (sk == "privileged") return Bool(sv, c.privileged);
        if (sk == "capabilities") {
          return Fields(sv, [&](std::string_view ck, od::value cv) -> Err {
            if (ck != "add") return {};
            return Each(cv, [&](od::value cap) -> Err {
              std::string s;
              Err ce = String(cap, s);
              if (!ce) c.capabilities_add.push_back(s);
              return ce;
            });
          });
        }
        return {};
      });
    }
    return {};
  });
  if (!e) out.push_back(std::move(c));
  return e;
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
        return Fields(sv, [&](std::string_view tk, od::value tv) -> Err {
          if (tk == "reason") return String(tv, s.last_terminated_reason);
          if (tk == "finishedAt") return Time(tv, s.last_terminated_finished);
          if (tk == "exitCode") {
            int64_t code = 0;
            Err ce = Int(tv, code);
            if (!ce) s.last_exit_code = code;
            return ce;
          }
          return {};
        });
      });
    }
    return {};
  });
  if (!e) out.push_back(std::move(s));
  return e;
}

Err DecodePod(od::value spec_or_status, std::string_view section, Pod& p) {
  if (section == "spec") {
    return Fields(spec_or_status, [&](std::string_view k, od::value f) -> Err {
      if (k == "nodeName") return String(f, p.node_name);
      if (k == "containers") {
        return Each(f, [&](od::value c) { return DecodeContainer(c, p.containers); });
      }
      if (k == "volumes") {
        return Each(f, [&](od::value vol) -> Err {
          std::string name;
          return Fields(vol, [&](std::string_view vk, od::value vv) -> Err {
            if (vk == "name") return String(vv, name);
            if (vk == "hostPath") {
              return Fields(vv, [&](std::string_view hk, od::value hv) -> Err {
                if (hk != "path") return {};
                std::string path;
                Err he = String(hv, path);
                if (!he) p.host_paths.push_back(path);
                return he;
              });
            }
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
    if (k == "conditions") {
      return Each(f, [&](od::value c) { return DecodeCondition(c, p.conditions); });
    }
    if (k == "containerStatuses") {
      return Each(f, [&](od::value c) { return DecodeContainerStatus(c, p.statuses); });
    }
    return {};
  });
}

Err DecodeNodeSection(od::value v, std::string_view section, Node& n) {
  if (section == "spec") {
    return Fields(v, [&](std::string_view k, od::value f) -> Err {
      if (k == "unschedulable") return Bool(f, n.unschedulable);
      return {};
    });
  }
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "allocatable") return Map(f, n.allocatable);
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
            Err ce = Each(sv, [&](od::value c) { return DecodeContainer(c, cs); });
            for (const auto& c : cs) d.images.push_back(c.image);
            return ce;
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
error_code ReadKind(od::object& obj, std::string& kind);

Err DecodeObject(od::object obj, std::string kind, Snapshot& out) {
  TRY_SJ(ReadKind(obj, kind), "kind");
  Metadata meta;
  meta.all_labels = kind != "Pod";
  Pod pod;
  Node node;
  DaemonSet ds;
  for (auto field : obj) {
    std::string_view key;
    TRY_SJ(field.unescaped_key().get(key), "");
    od::value value;
    TRY_SJ(field.value().get(value), std::string(key));
    if (key == "metadata") {
      TRY_ERR(DecodeMetadata(value, meta), "metadata");
    } else if (key == "spec" || key == "status") {
      if (kind == "Pod") TRY_ERR(DecodePod(value, key, pod), std::string(key));
      if (kind == "Node") TRY_ERR(DecodeNodeSection(value, key, node), std::string(key));
      if (kind == "DaemonSet") TRY_ERR(DecodeDaemonSetSection(value, key, ds), std::string(key));
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
    out.pods.push_back(std::move(pod));
  } else if (kind == "Node") {
    node.name = meta.name;
    node.labels = std::move(meta.labels);
    node.created = meta.created;
    out.nodes.push_back(std::move(node));
  } else if (kind == "DaemonSet") {
    ds.ns = meta.ns;
    ds.name = meta.name;
    ds.uid = meta.uid;
    ds.created = meta.created;
    out.daemonsets.push_back(std::move(ds));
  } else {
    out.other_kinds[kind.empty() ? "(no kind)" : kind]++;
  }
  return {};
}

// Reads an optional string field "kind" and rewinds the object. A structural error leaves the
// on-demand iterator unusable (reset() on it would crash), so it is returned at once.
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

Status ToStatus(const Err& e, const std::string& where) {
  std::string what = e.detail.empty() ? simdjson::error_message(e.code) : e.detail;
  return Status::ParseError(where + (e.path.empty() ? "" : ": field " + e.path) + ": " + what);
}

}  // namespace

namespace {

// Where a List's items are, found without parsing them: the List's own "kind" and the byte range
// of every element of its top-level "items" array. Parsing each item on its own keeps simdjson's
// structural index to one item instead of the whole document (4 bytes per structural
// character), which is what bounds memory on a 100,000-pod snapshot.
struct ListLayout {
  bool has_items = false;
  std::string kind;
  std::vector<std::pair<size_t, size_t>> items;  // [begin, end) offsets of each element
};

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

Status ScanList(std::string_view s, ListLayout& out) {
  int depth = 0;
  bool in_items = false;
  size_t item_start = 0;
  std::string last_key;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      size_t start = ++i;
      while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
      if (i >= s.size()) return Status::ParseError("unterminated string (truncated document?)");
      if (depth == 1) {
        std::string_view str = s.substr(start, i - start);
        size_t j = i + 1;
        while (j < s.size() && IsJsonSpace(s[j])) ++j;
        if (j < s.size() && s[j] == ':') {
          last_key.assign(str);
        } else if (last_key == "kind") {
          out.kind.assign(str);
        }
      } else if (in_items && depth == 2) {
        return Status::ParseError("items[" + std::to_string(out.items.size()) + "]: not an object");
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 1 && c == '[' && last_key == "items") {
        in_items = true;
        out.has_items = true;
      } else if (in_items && depth == 2) {
        if (c != '{') {
          return Status::ParseError("items[" + std::to_string(out.items.size()) +
                                    "]: not an object");
        }
        item_start = i;
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return Status::ParseError("unbalanced '" + std::string(1, c) + "'");
      if (in_items && depth == 2 && c == '}') out.items.push_back({item_start, i + 1});
      if (in_items && depth == 1 && c == ']') in_items = false;
    } else if (in_items && depth == 2 && !IsJsonSpace(c) && c != ',') {
      return Status::ParseError("items[" + std::to_string(out.items.size()) + "]: not an object");
    }
  }
  if (depth != 0) return Status::ParseError("unbalanced braces (truncated document?)");
  return Status::Ok();
}

Status DecodeList(const simdjson::padded_string& padded, const ListLayout& layout,
                  const std::string& source, Snapshot& out) {
  std::string item_kind = layout.kind == "List" || layout.kind.size() <= 4
                              ? ""
                              : layout.kind.substr(0, layout.kind.size() - 4);
  od::parser parser;
  size_t capacity = padded.size() + simdjson::SIMDJSON_PADDING;
  for (size_t index = 0; index < layout.items.size(); ++index) {
    auto [begin, end] = layout.items[index];
    std::string where = source + ": items[" + std::to_string(index) + "]";
    od::document doc;
    if (auto e = parser.iterate(padded.data() + begin, end - begin, capacity - begin).get(doc)) {
      return Status::ParseError(where + ": " + simdjson::error_message(e));
    }
    od::object obj;
    if (auto e = doc.get_object().get(obj)) {
      return Status::ParseError(where + ": " + simdjson::error_message(e));
    }
    Err err = DecodeObject(obj, item_kind, out);
    if (err) return ToStatus(err, where);
  }
  return Status::Ok();
}

Status DecodePadded(const simdjson::padded_string& padded, const std::string& source,
                    Snapshot& out) {
  std::string_view text(padded.data(), padded.size());
  if (!Trim(text).empty() && Trim(text)[0] == '{') {
    ListLayout layout;
    Status st = ScanList(text, layout);
    if (!st.ok()) return st.WithPrefix(source);
    bool is_list = layout.kind == "List" ||
                   (layout.kind.size() > 4 && layout.kind.substr(layout.kind.size() - 4) == "List");
    if (is_list && !layout.has_items) {
      return Status::ParseError(source + ": " + layout.kind + " without an items array");
    }
    if (is_list) {
      out.sources.push_back(source);
      return DecodeList(padded, layout, source, out);
    }
  }
  // A single object (or not an object at all): parse it whole.
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(padded).get(doc)) {
    return Status::ParseError(source + ": " + simdjson::error_message(e));
  }
  od::object root;
  if (auto e = doc.get_object().get(root)) {
    return Status::ParseError(
        source +
        ": expected a JSON object (a List or a Kubernetes object): " + simdjson::error_message(e));
  }
  std::string kind;
  if (auto e = ReadKind(root, kind)) {
    return Status::ParseError(source + ": " + simdjson::error_message(e));
  }
  out.sources.push_back(source);
  bool is_list = kind == "List" || (kind.size() > 4 && kind.substr(kind.size() - 4) == "List");
  if (!is_list) {
    Err e = DecodeObject(root, kind, out);
    if (e) return ToStatus(e, source + " (" + kind + ")");
    return Status::Ok();
  }
  std::string item_kind = kind == "List" ? "" : kind.substr(0, kind.size() - 4);
  od::array items;
  if (auto e = root.find_field_unordered("items").get_array().get(items)) {
    return Status::ParseError(source + ": " + kind +
                              " without an items array: " + simdjson::error_message(e));
  }
  size_t index = 0;
  for (auto element : items) {
    od::object obj;
    if (auto e = element.get_object().get(obj)) {
      return Status::ParseError(source + ": items[" + std::to_string(index) +
                                "]: " + simdjson::error_message(e));
    }
    Err e = DecodeObject(obj, item_kind, out);
    if (e) return ToStatus(e, source + ": items[" + std::to_string(index) + "]");
    ++index;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeJson(std::string_view json, const std::string& source, Snapshot& out) {
  return DecodePadded(simdjson::padded_string(json), source, out);
}

Status DecodeYaml(std::string_view yaml, const std::string& source, Snapshot& out) {
  // YAML -> JSON through yaml-cpp and nlohmann (kubectl's YAML is plain block YAML).
  std::function<nlohmann::json(const YAML::Node&)> convert = [&](const YAML::Node& n) {
    if (n.IsMap()) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) j[kv.first.Scalar()] = convert(kv.second);
      return j;
    }
    if (n.IsSequence()) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& item : n) j.push_back(convert(item));
      return j;
    }
    if (n.IsNull()) return nlohmann::json(nullptr);
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") return nlohmann::json(s);  // quoted in the YAML: a string
    if (auto i = ParseInt64(s)) return nlohmann::json(*i);
    if (s == "true" || s == "false") return nlohmann::json(s == "true");
    return nlohmann::json(s);
  };
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return DecodeJson(convert(root).dump(), source, out);
  } catch (const YAML::Exception& e) {
    return Status::ParseError(source + ": not valid YAML: " + e.what());
  }
}

Status LoadFile(const std::string& path, Snapshot& out) {
  simdjson::padded_string text;
  if (path == "-") {
    std::stringstream s;
    s << std::cin.rdbuf();
    text = simdjson::padded_string(s.str());
  } else {
    // Straight into simdjson's padded buffer: the document is in memory once.
    if (auto e = simdjson::padded_string::load(path).get(text)) {
      return Status::NotFound(path + ": cannot read (" + simdjson::error_message(e) + ")");
    }
  }
  std::string_view t = Trim(std::string_view(text.data(), text.size()));
  if (t.empty()) return Status::ParseError(path + ": empty input");
  if (t[0] == '{' || t[0] == '[') return DecodePadded(text, path, out);
  return DecodeYaml(t, path, out);
}

}  // namespace tocsin::k8s
