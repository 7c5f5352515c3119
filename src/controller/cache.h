#pragma once

#include <functional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "k8s/objects.h"
#include "k8s/watch.h"

namespace tocsin::controller {

// The objects the informers keep, as the audit's decoded structs (never raw JSON), in one
// k8s::Snapshot that evaluations read in place under a shared lock: no copy per evaluation.
// Objects are found by "Kind/namespace/name" through an index; a delete moves the last element
// of its vector into the hole.
class ObjectCache {
 public:
  // Keeps the jobs' pod templates as drift compares them (Snapshot::workloads) beside the
  // audit's jobs: only the controller's drift reads them (--drift-baseline). Set before the
  // informers start.
  void KeepTemplates(bool keep);
  // Replaces every object of `kind` with `listed`'s (a relist).
  void Replace(const std::string& kind, k8s::Snapshot&& listed);
  // Applies one watch event's object (ADDED/MODIFIED upsert, DELETED erase).
  void Apply(const std::string& kind, k8s::WatchEvent::Type type, k8s::Snapshot&& object);
  // The device plugins' ConfigMaps (fetched by the controller, not watched) and what could not
  // be read of them (the audit's load_errors).
  // True when they differ from what was there.
  bool SetConfigMaps(std::vector<k8s::ConfigMap> configmaps, std::vector<std::string> errors);
  // The uid of the object of `kind` named `ns`/`name` ("" when it is not cached).
  std::string Uid(const std::string& kind, const std::string& ns, const std::string& name) const;
  size_t Count(const std::string& kind) const;

  // Runs `read` on the snapshot under a shared lock.
  template <typename F>
  auto Read(F&& read) const {
    std::shared_lock lock(mu_);
    return read(snap_);
  }

 private:
  mutable std::shared_mutex mu_;
  k8s::Snapshot snap_;
  bool keep_templates_ = false;
  std::unordered_map<std::string, size_t> index_;  // "Kind/ns/name" -> position in its vector
};

}  // namespace tocsin::controller
