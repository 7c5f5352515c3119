#include "controller/discovery.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace tocsin::controller {

std::vector<Resource> CoreResources() {
  return {{"nodes", "/api/v1/nodes", "Node", true, false},
          {"pods", "/api/v1/pods", "Pod", true, false},
          {"daemonsets", "/apis/apps/v1/daemonsets", "DaemonSet", true, false},
          {"jobs", "/apis/batch/v1/jobs", "Job", false, false}};
}

CrdDiscovery DiscoverCrds(k8s::ApiClient& client, const std::vector<std::string>& wanted) {
  struct Crd {
    const char* group_version;
    const char* resource;
    const char* kind;
  };
  static const Crd kCrds[] = {{"kubeflow.org/v1", "pytorchjobs", "PyTorchJob"},
                              {"kubeflow.org/v1", "mpijobs", "MPIJob"},
                              {"jobset.x-k8s.io/v1alpha2", "jobsets", "JobSet"}};
  CrdDiscovery out;
  std::map<std::string, std::optional<std::vector<std::string>>> served;  // per group version
  for (const Crd& crd : kCrds) {
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), crd.resource) == wanted.end()) {
      continue;
    }
    auto it = served.find(crd.group_version);
    if (it == served.end()) {
      std::optional<std::vector<std::string>> names;
      auto body = client.Get(std::string("/apis/") + crd.group_version);
      if (body.ok()) {
        names.emplace();
        auto doc = nlohmann::json::parse(*body, nullptr, false);
        if (doc.is_object() && doc.contains("resources") && doc["resources"].is_array()) {
          for (const auto& r : doc["resources"]) {
            if (r.is_object() && r.contains("name") && r["name"].is_string()) {
              names->push_back(r["name"].get<std::string>());
            }
          }
        }
      } else if (body.status().code() == StatusCode::kNotFound) {
        names.emplace();  // the group is not served: nothing to watch
      } else {
        out.errors.push_back(std::string(crd.group_version) + ": " + body.status().message());
      }
      it = served.emplace(crd.group_version, std::move(names)).first;
    }
    if (!it->second) {
      out.unknown.push_back(crd.resource);
      continue;
    }
    if (std::find(it->second->begin(), it->second->end(), crd.resource) != it->second->end()) {
      out.found.push_back({crd.resource,
                           std::string("/apis/") + crd.group_version + "/" + crd.resource,
                           crd.kind, false, true});
    } else {
      out.absent.push_back(crd.resource);
    }
  }
  return out;
}

}  // namespace tocsin::controller
