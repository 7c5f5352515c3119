#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

#include "base/status.h"
#include "k8s/objects.h"

namespace tocsin::k8s {

// Adds the objects of one `kubectl get ... -o json` output to `out`: a List (items of any
// kind), a *List, or a single object. Nodes, Pods, DaemonSets and ConfigMaps (device-plugin
// configs only) are decoded; other kinds are
// counted. Errors name the source, the item and the field. Decodes with simdjson's on-demand
// API: the document stays in memory once and objects are decoded straight into `out`.
// `meta`, when given, receives the document's kind and, for a List, its metadata.continue and
// resourceVersion (what a paginated list needs).
struct ListMeta {
  std::string kind;
  std::string continue_token;
  std::string resource_version;
};
Status DecodeJson(std::string_view json, const std::string& source, Snapshot& out,
                  ListMeta* meta = nullptr);

// The same for `-o yaml` output (converted to JSON first; meant for small snapshots).
Status DecodeYaml(std::string_view yaml, const std::string& source, Snapshot& out);

// Caps on untrusted input (a clear error, never a runaway read):
// - one List item at most kMaxListItemBytes: the API server stores an object in etcd at most
//   ~1.5 MiB (etcd's --max-request-bytes), so 64 MiB leaves room for any hand-built file while
//   bounding the window a streamed List grows to; the error names the item's index;
// - a text read whole at most kMaxWholeTextBytes: stdin, and a file that is not a JSON List (a
//   single object, YAML, a typed List whose items lack a kind). A JSON List file is streamed
//   through a window and has no cap on its size (a 10,000-node snapshot is ~400 MB).
inline constexpr size_t kMaxListItemBytes = size_t{64} << 20;
inline constexpr size_t kMaxWholeTextBytes = size_t{1} << 30;

// Reads FILE (or "-" for stdin) and decodes it as JSON, or as YAML when it does not start with
// '{' or '['. A file larger than `max_bytes` is refused unread (the controller's baseline).
Status LoadFile(const std::string& path, Snapshot& out,
                size_t max_bytes = std::numeric_limits<size_t>::max());

// The objects kept with Snapshot::keep_raw as one `kubectl get -o json` List (what `tocsin
// snapshot` writes; LoadFile reads it back).
std::string EncodeRawList(const Snapshot& snapshot);

}  // namespace tocsin::k8s
