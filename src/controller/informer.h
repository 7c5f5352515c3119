#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "controller/cache.h"
#include "k8s/api_client.h"

namespace tocsin::controller {

// A watched collection: "pods" at /api/v1/pods, kind Pod.
struct Resource {
  std::string name;        // the metric label: pods, nodes, daemonsets, jobs, pytorchjobs, ...
  std::string collection;  // the cluster-wide path
  std::string kind;
  // The checks read it (nodes, pods, daemonsets): while it is not watched they are unknown.
  // The others (jobs and the training kinds) only name the objects Events go to.
  bool checked = false;
  bool optional = false;  // a CRD's kind: a 404 list means it was uninstalled (Informer gone)
};

struct InformerOptions {
  // Each watch asks the server to end it after a random time in [min, 2 min) as client-go's
  // reflector does, so that watches spread over the API servers; the client bounds it by that
  // plus `watch_slack`.
  std::chrono::seconds watch_min{300};
  std::chrono::seconds watch_slack{30};
  std::chrono::milliseconds backoff{800};       // first wait after an error, doubled, jittered
  std::chrono::milliseconds max_backoff{30000};
  // A list this soon after the previous one waits its backoff first; a watch that lasted this
  // long (or brought events) starts the backoff over.
  std::chrono::milliseconds relist_spacing{10000};
};

struct InformerStats {
  bool synced = false;    // the first list is in the cache
  bool watch_up = false;  // a watch is established now
  int64_t relists = 0;    // lists after the first (410 Gone, an ERROR event, a broken stream)
  int64_t resumes = 0;    // watches resumed from the last seen version after a drop
  int64_t events = 0;     // watch events applied
  int64_t bad_events = 0; // events that could not be decoded (the cache is relisted)
  bool gone = false;      // an optional kind whose list answered 404: the thread has ended
  std::string last_error;
};

// client-go's reflector for one resource: list in pages, then watch from the list's
// resourceVersion with allowWatchBookmarks; a watch that ends or drops is resumed from the last
// version seen (objects or bookmarks); 410 Gone/Expired (as an HTTP status or an ERROR event)
// relists; errors back off with jitter. Every change lands in the shared cache and calls
// `on_change`. Runs on its own thread with its own API client (a libcurl handle is one thread's).
class Informer {
 public:
  Informer(Resource resource, std::unique_ptr<k8s::ApiClient> client, ObjectCache* cache,
           InformerOptions options, std::function<void()> on_change);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Asks the thread to stop (Stop waits for it).
  void RequestStop() { stop_ = true; }
  // Stops within about a second (an open watch is aborted) and joins the thread.
  void Stop();

  const Resource& resource() const { return resource_; }
  InformerStats stats() const;

 private:
  void Run();
  Status List();
  // One watch from version_; sets relist_ when the version is gone.
  Status WatchOnce();
  void Backoff(std::chrono::milliseconds& wait);
  void SetError(const Status& st);
  void MarkDown();

  Resource resource_;
  std::unique_ptr<k8s::ApiClient> client_;
  ObjectCache* cache_;
  InformerOptions options_;
  std::function<void()> on_change_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mt19937_64 random_;
  std::string version_;  // the last resourceVersion seen
  bool relist_ = true;
  bool opened_ = false;  // the current watch was established (2xx)
  std::optional<std::chrono::steady_clock::time_point> logged_at_;

  mutable std::mutex mu_;
  InformerStats stats_;
};

}  // namespace tocsin::controller
