#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "controller/cache.h"
#include "controller/tracker.h"
#include "k8s/api_client.h"
#include "k8s/events.h"

namespace tocsin::controller {

// The Event a transition posts, on the object its finding names: a DaemonSet (daemonset.*),
// a Pod (pod.*), a Node (node.*, daemonset.coverage of a node, a canary.* finding that blames a
// node; in `event_namespace`), the job's
// top object (job.*: Job, JobSet, PyTorchJob or MPIJob). None for subjects with no object
// ("cluster", "nodes", "canary", a canary's "pair/A/B" or "blocks/A/B": the canary's Job got
// its Event when it was judged), for an object the cache does not hold (a cleared finding's object may be
// gone; a name from anywhere else must not get an Event), or a job kind that is not cached.
std::optional<k8s::EventSpec> EventFor(const Transition& t, const ObjectCache& cache,
                                       const std::string& event_namespace,
                                       const std::string& instance);

// Posts Events from its own thread, so that a slow Events API never holds an evaluation (nor
// /metrics). A bounded queue: what does not fit, and what is left when this replica stops
// leading, is counted as dropped, never posted late by a follower.
class EventPoster {
 public:
  EventPoster(std::unique_ptr<k8s::ApiClient> client, std::function<bool()> may_post,
              prometheus::Family<prometheus::Counter>* posted, prometheus::Counter* dropped,
              size_t capacity = 1000);
  ~EventPoster();
  void Start();
  // Aborts a request in flight and drops the rest (bounded: about a second).
  void Stop();
  void Enqueue(k8s::EventSpec event);

 private:
  void Run();

  std::unique_ptr<k8s::ApiClient> client_;
  std::function<bool()> may_post_;
  prometheus::Family<prometheus::Counter>* posted_;
  prometheus::Counter* dropped_;
  size_t capacity_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<k8s::EventSpec> queue_;
  std::thread thread_;
};

}  // namespace tocsin::controller
