#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tocsin::canary {

// What every canary pod asks for, as a production training job does (the controller's
// --canary-* flags). Never nodeName, never hostPath devices, never privileged: placement is a
// required node affinity, the fabric comes from the device plugin through the scheduler.
struct CanaryConfig {
  std::string ns = "tocsin";
  std::string image;                                         // --canary-image
  std::vector<std::pair<std::string, std::string>> resources;  // --canary-resource NAME=QTY
  std::string network;         // --canary-network: the Multus annotation's value
  bool ipc_lock = true;        // IPC_LOCK (RDMA memory registration pins pages)
  std::string priority_class;  // --canary-priority-class (lowest priority)
  std::string queue;           // --canary-queue: Kueue's LocalQueue (kueue.x-k8s.io/queue-name)
  std::string expect = "rdma";  // --canary-expect rdma|tcp: what the data path must be
  std::string transport = "fabric";  // bench net --transport
  std::string provider;              // bench net --provider ("" = libfabric's first)
  std::vector<std::string> tests = {"p2p", "allreduce"};
  std::string min_bytes = "1M";
  std::string max_bytes = "64M";
  double min_busbw = 0;  // GB/s, bench net --min-busbw (0: no floor)
  int bench_timeout_s = 60;
  int port = 29500;
  int active_deadline_s = 600;
  int ttl_after_finished_s = 300;
  std::map<std::string, std::string> env;   // NCCL_*/FI_*/UCX_* from --canary-env-from
  nlohmann::json tolerations = nlohmann::json::array();  // from the reference template
  std::string token_secret = "tocsin-canary-token";     // key "token": the ranks' secret
  // The owner of every canary object (the controller's anchor ConfigMap): deleting it collects
  // them all.
  std::string owner_name, owner_uid;
};

// One rank's Job of one pair of a round.
struct RankPlan {
  std::string round;  // the round's id (a label value)
  int pair = 0;
  int rank = 0;  // 0 or 1
  std::string node;     // where this rank must run
  std::string partner;  // the other rank's node
  std::string why;      // the planner's reason
  std::string coordinator_ip;  // rank 1: rank 0's pod IP
};

// Labels and annotations of canary objects (public: the README names them).
inline constexpr char kCanaryLabel[] = "tocsin.io/canary";  // "true" on every canary object
inline constexpr char kRoundLabel[] = "tocsin.io/canary-round";
inline constexpr char kPairLabel[] = "tocsin.io/canary-pair";
inline constexpr char kRankLabel[] = "tocsin.io/canary-rank";
inline constexpr char kNodeAnnotation[] = "tocsin.io/canary-node";
inline constexpr char kPartnerAnnotation[] = "tocsin.io/canary-partner";
inline constexpr char kWhyAnnotation[] = "tocsin.io/canary-why";
inline constexpr char kPlannedAnnotation[] = "tocsin.io/canary-planned";  // RFC 3339

// "tocsin-canary-ROUND-PAIR-rRANK" (at most 63 characters: the pods' job-name label).
std::string JobName(const std::string& round, int pair, int rank);
nlohmann::json JobFor(const CanaryConfig& config, const RankPlan& plan);

// The NCCL_*, FI_*, UCX_* variables (literal values only) and the tolerations of a reference
// object: a ConfigMap's data, or the first container of a Job's, CronJob's, PyTorchJob's
// (Worker, else Master), MPIJob's (Worker) or JobSet's first replicated Job's pod template.
// `skipped` counts the variables whose value comes from elsewhere (valueFrom).
struct Reference {
  std::map<std::string, std::string> env;
  nlohmann::json tolerations = nlohmann::json::array();
  int skipped = 0;
};
Result<Reference> ReadReference(const nlohmann::json& object);
bool FabricEnv(const std::string& name);

}  // namespace tocsin::canary
