// AdmissionReviews as the controller's webhook decodes them (hostile: whatever reaches the port),
// then the audit's job checks over what was decoded and the response encoded.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "audit/jobs.h"
#include "k8s/admission.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = tocsin::k8s::DecodeAdmissionReview(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!r.ok()) return 0;
  std::vector<std::string> warnings;
  tocsin::audit::Options options;
  options.fabric_network = "rdma-net";
  for (const auto& f : tocsin::audit::CheckJobObject(r->job, options, "topology.kubernetes.io/zone")) {
    warnings.push_back(f.check + ": " + f.message);
  }
  (void)tocsin::k8s::EncodeAdmissionResponse(r->uid, warnings, warnings.empty() ? "" : "denied");
  return 0;
}
