#include "controller/cache.h"

#include <algorithm>
#include <mutex>

namespace tocsin::controller {
namespace {

std::string Key(const std::string& kind, const k8s::Node& n) { return kind + "//" + n.name; }
std::string Key(const std::string& kind, const k8s::Pod& p) { return kind + "/" + p.ns + "/" + p.name; }
std::string Key(const std::string& kind, const k8s::DaemonSet& d) {
  return kind + "/" + d.ns + "/" + d.name;
}
std::string Key(const std::string&, const k8s::ObjectRef& o) {
  return o.kind + "/" + o.ns + "/" + o.name;
}
// A job's pod templates as drift reads them, beside the job itself under the same kind prefix.
std::string Key(const std::string&, const k8s::Workload& w) {
  return w.kind + "/" + w.ns + "/" + w.name + "/template";
}

// The vector of `snap` that holds `kind` (jobs of every job kind share one).
template <typename F>
void WithVector(k8s::Snapshot& snap, const std::string& kind, F&& f) {
  if (kind == "Node") f(snap.nodes);
  if (kind == "Pod") f(snap.pods);
  if (kind == "DaemonSet") f(snap.daemonsets);
  if (k8s::IsJobKind(kind)) f(snap.jobs);
  if (k8s::IsWorkloadKind(kind)) f(snap.workloads);
}

// Runs f(theirs, mine) on the vectors that hold `kind` in `from` and in `to`.
template <typename F>
void Paired(k8s::Snapshot& from, k8s::Snapshot& to, const std::string& kind, F&& f) {
  WithVector(from, kind, [&](auto& theirs) {
    WithVector(to, kind, [&](auto& mine) {
      if constexpr (std::is_same_v<std::decay_t<decltype(theirs)>, std::decay_t<decltype(mine)>>) {
        f(theirs, mine);
      }
    });
  });
}

template <typename T>
bool OfKind(const std::string&, const T&) {
  return true;
}
bool OfKind(const std::string& kind, const k8s::ObjectRef& o) { return o.kind == kind; }
bool OfKind(const std::string& kind, const k8s::Workload& w) { return w.kind == kind; }

template <typename T>
void Upsert(std::vector<T>& vec, std::unordered_map<std::string, size_t>& index,
            const std::string& kind, T&& obj) {
  std::string key = Key(kind, obj);
  auto it = index.find(key);
  if (it != index.end()) {
    vec[it->second] = std::move(obj);
    return;
  }
  index.emplace(std::move(key), vec.size());
  vec.push_back(std::move(obj));
}

template <typename T>
void Erase(std::vector<T>& vec, std::unordered_map<std::string, size_t>& index,
           const std::string& kind, const T& obj) {
  auto it = index.find(Key(kind, obj));
  if (it == index.end()) return;
  size_t pos = it->second;
  index.erase(it);
  if (pos + 1 != vec.size()) {
    vec[pos] = std::move(vec.back());
    index[Key(kind, vec[pos])] = pos;
  }
  vec.pop_back();
}

}  // namespace

void ObjectCache::KeepTemplates(bool keep) {
  std::unique_lock lock(mu_);
  keep_templates_ = keep;
}

void ObjectCache::Replace(const std::string& kind, k8s::Snapshot&& listed) {
  std::unique_lock lock(mu_);
  if (!keep_templates_) listed.workloads.clear();
  std::string prefix = kind + "/";
  std::erase_if(index_, [&](const auto& kv) { return kv.first.compare(0, prefix.size(), prefix) == 0; });
  WithVector(snap_, kind, [&](auto& vec) {
    std::erase_if(vec, [&](const auto& o) { return OfKind(kind, o); });
  });
  // Positions of the other job kinds moved: the shared vector is indexed again.
  if (k8s::IsJobKind(kind)) {
    for (size_t i = 0; i < snap_.jobs.size(); ++i) index_[Key(kind, snap_.jobs[i])] = i;
  }
  if (k8s::IsWorkloadKind(kind)) {
    for (size_t i = 0; i < snap_.workloads.size(); ++i) {
      index_[Key(kind, snap_.workloads[i])] = i;
    }
  }
  Paired(listed, snap_, kind, [&](auto& theirs, auto& mine) {
    for (auto& o : theirs) {
      if (OfKind(kind, o)) Upsert(mine, index_, kind, std::move(o));
    }
  });
}

void ObjectCache::Apply(const std::string& kind, k8s::WatchEvent::Type type,
                        k8s::Snapshot&& object) {
  std::unique_lock lock(mu_);
  if (!keep_templates_) object.workloads.clear();
  bool erase = type == k8s::WatchEvent::Type::kDeleted;
  Paired(object, snap_, kind, [&](auto& theirs, auto& mine) {
    for (auto& o : theirs) {
      if (!OfKind(kind, o)) continue;
      if (erase) {
        Erase(mine, index_, kind, o);
      } else {
        Upsert(mine, index_, kind, std::move(o));
      }
    }
  });
}

bool ObjectCache::SetConfigMaps(std::vector<k8s::ConfigMap> configmaps,
                                std::vector<std::string> errors) {
  std::unique_lock lock(mu_);
  auto same = [](const k8s::ConfigMap& a, const k8s::ConfigMap& b) {
    return a.ns == b.ns && a.name == b.name && a.data == b.data;
  };
  bool changed = errors != snap_.load_errors ||
                 !std::equal(configmaps.begin(), configmaps.end(), snap_.configmaps.begin(),
                             snap_.configmaps.end(), same);
  snap_.configmaps = std::move(configmaps);
  snap_.load_errors = std::move(errors);
  return changed;
}

std::string ObjectCache::Uid(const std::string& kind, const std::string& ns,
                             const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = index_.find(kind + "/" + ns + "/" + name);
  if (it == index_.end()) return "";
  size_t i = it->second;
  if (kind == "Node") return i < snap_.nodes.size() ? snap_.nodes[i].uid : "";
  if (kind == "Pod") return i < snap_.pods.size() ? snap_.pods[i].uid : "";
  if (kind == "DaemonSet") return i < snap_.daemonsets.size() ? snap_.daemonsets[i].uid : "";
  return i < snap_.jobs.size() ? snap_.jobs[i].uid : "";
}

size_t ObjectCache::Count(const std::string& kind) const {
  std::shared_lock lock(mu_);
  if (kind == "Node") return snap_.nodes.size();
  if (kind == "Pod") return snap_.pods.size();
  if (kind == "DaemonSet") return snap_.daemonsets.size();
  return static_cast<size_t>(std::count_if(snap_.jobs.begin(), snap_.jobs.end(),
                                           [&](const k8s::ObjectRef& o) { return o.kind == kind; }));
}

}  // namespace tocsin::controller
