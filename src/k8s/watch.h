#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "k8s/objects.h"

namespace tocsin::k8s {

// One line of a watch stream: {"type": ..., "object": {...}}.
struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  std::string resource_version;  // the object's metadata.resourceVersion (a BOOKMARK's: the stream's)
  // ERROR: the Status the server sent (code 410, reason Expired or Gone: the version is too old).
  int64_t code = 0;
  std::string reason;
  std::string message;
  // ADDED, MODIFIED, DELETED: the object, decoded as in a list (one element of one vector; a
  // kind tocsin does not read is only counted in other_kinds).
  Snapshot object;
};

// Decodes one watch event; `kind` is the watched kind (used when the object lacks its own).
// Errors name `source` and the field.
Status DecodeWatchEvent(std::string_view line, const std::string& kind, const std::string& source,
                        WatchEvent& out);

}  // namespace tocsin::k8s
