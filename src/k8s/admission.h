#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "k8s/objects.h"

namespace tocsin::k8s {

// An AdmissionReview (admission.k8s.io/v1) request, as a validating webhook reads it: hostile
// input (whatever reaches the port), decoded with caps and errors that say what is wrong.
struct AdmissionRequest {
  std::string uid;        // echoed in the response (required)
  std::string kind;       // request.kind.kind
  std::string operation;  // CREATE, UPDATE, ...
  std::string ns, name;
  bool dry_run = false;
  bool has_object = false;  // request.object was present and decoded
  ObjectRef job;            // request.object when it is a job kind (IsJobKind); else kind only
};

inline constexpr size_t kMaxAdmissionReviewBytes = 4 << 20;  // above the API's 3 MiB request
inline constexpr size_t kMaxAdmissionDepth = 128;             // JSON nesting
inline constexpr size_t kMaxPodSets = 256;                    // pod templates in one object

Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body);

// The response review: `warnings` (each cut at 256 bytes, at most 32 and 4 KiB in all, as the API
// server keeps them), denied when `deny_message` is not empty (HTTP 403 in the status).
std::string EncodeAdmissionResponse(const std::string& uid, const std::vector<std::string>& warnings,
                                    const std::string& deny_message);

}  // namespace tocsin::k8s
