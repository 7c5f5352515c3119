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

bool IsJobKind(const std::string& kind) {
  return kind == "Job" || kind == "PyTorchJob" || kind == "MPIJob" || kind == "JobSet";
}

bool IsWorkloadKind(const std::string& kind) {
  return IsJobKind(kind) || kind == "CronJob";
}

}  // namespace tocsin::k8s
