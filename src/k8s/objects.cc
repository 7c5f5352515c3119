#include "k8s/objects.h"

namespace tocsin::k8s {

const Condition* Pod::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool Pod::IsReady() const {
  const Condition* c = FindCondition("Ready");
  return c != nullptr && c->status == "True";
}

const Condition* Node::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsTopologyAnnotation(std::string_view k) {
  return k == "kueue.x-k8s.io/podset-required-topology" ||
         k == "kueue.x-k8s.io/podset-preferred-topology" ||
         k == "alpha.jobset.sigs.k8s.io/exclusive-topology";
}

bool IsJobKind(const std::string& kind) {
  return kind == "Job" || kind == "PyTorchJob" || kind == "MPIJob" || kind == "JobSet" ||
         kind == "TrainJob";
}

}  // namespace tocsin::k8s
