#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"
#include "k8s/objects.h"

namespace tocsin::agent {

// Every Kubernetes API call the agent makes (its node, status patches, Events, the taint, the
// fabric facts, the pods of its node), with ApiClient's semantics: 2xx only after its bounded
// retries, a 409 is Unavailable with "conflict" in the message. Two implementations: the
// default makes each call in a short-lived child process (ChildKubeClient), so that the agent,
// on every node, never maps libcurl and its TLS stack (8.5 MiB of RSS); InProcessKubeClient
// keeps an ApiClient (`--kube-in-process`).
class KubeClient {
 public:
  virtual ~KubeClient() = default;
  virtual Result<std::string> Get(const std::string& path) = 0;
  virtual Result<std::string> Send(const std::string& method, const std::string& path,
                                   const std::string& body, const std::string& content_type) = 0;
  // A collection (with its query) listed page by page, decoded into `out` (as ApiClient::List).
  virtual Status List(const std::string& collection, const std::string& kind,
                      k8s::Snapshot& out) = 0;
  // Calls that failed for want of an answer: a child that could not start, was killed at its
  // deadline, exited without answering or wrote a malformed or oversize one (0 in process).
  virtual uint64_t failures() const { return 0; }
};

std::unique_ptr<KubeClient> InProcessKubeClient(std::unique_ptr<k8s::ApiClient> client);

struct KubeChildOptions {
  std::string self_exe;               // `tocsin`, run as `agent --kube-call`
  k8s::KubeconfigOptions kubeconfig;  // how the child reaches the cluster (as the agent did)
  k8s::ClientOptions client;          // its request timeout and attempts
  // The child is killed this long after it started (0: from `client`: every attempt at its
  // request timeout, the backoffs, and 5 s to start and to load libcurl).
  std::chrono::milliseconds deadline{0};
  // Where failures() counts: shared by the agent's clients (the reporter's and the pods
  // task's), so that one metric counts every call; null: the client's own.
  std::shared_ptr<std::atomic<uint64_t>> failures;
};

// Each call is `self_exe agent --kube-call` with the request on its stdin and the answer on its
// stdout (kube_call.h): it resolves the cluster's access itself (the token file re-read each
// time), loads libcurl, makes the call with ApiClient's retries and exits.
std::unique_ptr<KubeClient> ChildKubeClient(KubeChildOptions options);

}  // namespace tocsin::agent
