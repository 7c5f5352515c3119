#pragma once

// Internal to src/k8s: decoding helpers over simdjson's on-demand values. Each returns an Err that
// carries the JSON path of the field that failed, so errors can name it.

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/strings.h"
#include "base/time.h"
#include "k8s/objects.h"

namespace tocsin::k8s::internal {

namespace od = simdjson::ondemand;
using simdjson::error_code;

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

inline bool IsNull(od::value& v) {
  od::json_type t;
  return !v.type().get(t) && t == od::json_type::null;
}

inline Err String(od::value v, std::string& out) {
  if (IsNull(v)) return {};
  std::string_view s;
  TRY_SJ(v.get_string().get(s), "");
  out.assign(s);
  return {};
}

inline Err Int(od::value v, int64_t& out) {
  if (IsNull(v)) return {};
  TRY_SJ(v.get_int64().get(out), "");
  return {};
}

inline Err Bool(od::value v, bool& out) {
  if (IsNull(v)) return {};
  TRY_SJ(v.get_bool().get(out), "");
  return {};
}

inline Err Time(od::value v, std::optional<TimePoint>& out) {
  std::string s;
  Err e = String(v, s);
  if (e) return e;
  if (s.empty()) return {};
  out = ParseRfc3339(s);
  if (!out) return {simdjson::SUCCESS, "", "not an RFC 3339 time: " + Quote(s)};
  return {};
}

inline bool KeepAll(std::string_view) { return true; }

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

// Appends every string of an array to `out` (a null array adds nothing).
inline Err AppendStrings(od::value v, std::vector<std::string>& out) {
  return Each(v, [&](od::value item) -> Err {
    std::string s;
    Err e = String(item, s);
    if (!e) out.push_back(std::move(s));
    return e;
  });
}

// Appends the string field `key` of an object to `out` (absent: nothing).
inline Err AppendField(od::value v, std::string_view key, std::vector<std::string>& out) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k != key) return {};
    std::string s;
    Err e = String(f, s);
    if (!e) out.push_back(std::move(s));
    return e;
  });
}

inline bool ExtendedResource(std::string_view k) { return k.find('/') != std::string_view::npos; }
// The env a pod's containers keep (NCCL_*, WORLD_SIZE) and a template's (NCCL_*, UCX_*, FI_*).
bool PodEnv(std::string_view name);
bool TemplateEnv(std::string_view name);
// A container's env, the variables `keep` names (valueFrom entries kept with an empty value).
Err DecodeEnv(od::value v, StringMap& env, bool (*keep)(std::string_view) = PodEnv);
// One container into `out`, its name prefixed by `prefix`; `args`, when given, receives its
// command and args (DaemonSets only: a pod's are not kept).
Err DecodeContainer(od::value v, std::vector<Container>& out,
                    std::vector<std::string>* args = nullptr,
                    bool (*keep_env)(std::string_view) = PodEnv, const std::string& prefix = "");

struct Metadata {
  bool all_labels = true;  // false for pods: job-grouping labels only
  std::string ns, name, uid;
  StringMap labels, annotations;
  std::optional<TimePoint> created;
  std::vector<OwnerRef> owners;
};
Err DecodeMetadata(od::value v, Metadata& m);
// One entry of a conditions list (a Pod's, a Node's) into `out`.
Err DecodeCondition(od::value v, std::vector<Condition>& out);
// A Pod's "spec" or "status" (`section`); a pod template's spec is a Pod's "spec" (decode_pod.cc).
Err DecodePod(od::value spec_or_status, std::string_view section, Pod& p);
// The "spec" or "status" of a job's top object (IsJobKind): its pod sets, whether it finished
// (decode_jobs.cc).
Err DecodeJobSection(od::value v, std::string_view section, const std::string& kind,
                     ObjectRef& job);

// The fabric kinds (decode_fabric.cc): the object's spec into its struct.
Err DecodeNetworkAttachmentSpec(od::value spec, NetworkAttachment& out);
Err DecodeSriovPolicySpec(od::value spec, SriovPolicy& out);
Err DecodeNicClusterPolicySpec(od::value spec, NicClusterPolicy& out);
Err DecodeWorkloadSpec(od::value spec, Workload& out);

// Decodes one object of `kind` (or of its own "kind" field) into `out`; other kinds are counted.
Err DecodeObject(od::object obj, std::string kind, Snapshot& out);
// Reads an optional string field "kind" and rewinds the object. A structural error leaves the
// on-demand iterator unusable (reset() on it would crash), so it is returned at once.
error_code ReadKind(od::object& obj, std::string& kind);
// "WHERE: field PATH: WHY"
// What went wrong, in plain words (simdjson's own messages name its types and functions).
std::string JsonError(error_code code);

Status ToStatus(const Err& e, const std::string& where);

}  // namespace tocsin::k8s::internal
