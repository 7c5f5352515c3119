#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "ranks/protocol.h"
#include "ranks/socket.h"

namespace tocsin::ranks {

// How a rank finds the others, as torchrun does: flags, else RANK / WORLD_SIZE / MASTER_ADDR /
// MASTER_PORT (JOB_COMPLETION_INDEX for Kubernetes Indexed Jobs), token from TOCSIN_BENCH_TOKEN.
struct WorldOptions {
  int rank = -1;
  int world_size = -1;
  std::string coordinator;  // HOST:PORT; rank 0 listens there (on that address only)
  std::string token;        // every rank presents it; required with more than one rank
  bool insecure_no_token = false;  // allow an empty token (anyone who reaches the port joins)
  // A joining connection that sends no complete hello within this is dropped.
  std::chrono::milliseconds hello_timeout{3000};
  std::chrono::milliseconds timeout{60000};  // rendezvous, and any one wait for a peer
  std::string params;  // every rank must pass the same text (the benchmark's parameters)
};

// Fills what the flags left unset from the environment; errors name the variable.
Status ApplyEnvironment(WorldOptions& options, const std::map<std::string, std::string>& env);
std::map<std::string, std::string> RankEnvironment();  // the variables above, from this process
Status Validate(const WorldOptions& options);

// This machine's hostname (what ranks report as their host): HostName (sys/env.h) of the real
// root.
std::string Hostname();
// This rank's Kubernetes node name: $TOCSIN_NODE_NAME (the downward API's spec.nodeName), "" when
// unset. Sent to rank 0 with the hello; rank 0 drops one that is not a node name and marks it.
std::string NodeName();

class Coordinator;

// One rank's view of the job: the control connection to the coordinator (run by rank 0 in a
// thread), barriers and small all-gathers through it, and abort messages that reach every rank
// when any rank fails or goes away.
class World {
 public:
  // Connects to the coordinator (rank 0 starts it first), retrying until the timeout, and says
  // hello: token, version, rank, world size and parameters.
  static Result<std::unique_ptr<World>> Connect(const WorldOptions& options);
  ~World();

  // This rank's IP as seen on the way to the coordinator: the interface to publish.
  const std::string& local_ip() const { return local_ip_; }
  int rank() const { return options_.rank; }
  int size() const { return options_.world_size; }
  const WorldOptions& options() const { return options_; }

  // Publishes this rank's data address; returns every rank's peer entry once all ranks joined.
  // A refused or missing rank is an error naming it.
  Result<std::vector<Peer>> Join(const std::string& data_address);
  // After Join: the coordinator's secret for this run, which authenticates data connections.
  const std::string& run_secret() const { return run_secret_; }

  // Every rank's `payload`, by rank; a barrier.
  Result<std::vector<std::string>> AllGather(const std::string& payload);
  Status Barrier();

  // The control socket: readable when an abort arrives. PollAbort() reads it without waiting.
  int control_fd() const { return control_.get(); }
  Status PollAbort();

  // A data-plane wait for `peer` ran out: tells the coordinator, which waits briefly for the
  // other ranks' reports and blames the rank(s) that were waited on but reported nothing (hung
  // or dead), then aborts everyone. Returns that verdict.
  Status ReportStall(int peer, const std::string& detail);

  // Tells every rank that this one failed (best effort), or that it finished.
  void Abort(const std::string& reason);
  void Leave();
  // After an abort: the rank the coordinator blamed, as "rank N (host ip)"; "" when unknown.
  const std::string& aborted_by() const { return aborted_by_; }

 private:
  explicit World(WorldOptions options);
  Result<std::string> Expect(const std::string& type);

  WorldOptions options_;
  Fd control_;
  std::string local_ip_;
  std::string coordinator_name_;
  std::string run_secret_;
  std::unique_ptr<Coordinator> coordinator_;
  std::thread coordinator_thread_;
  int round_ = 0;
  std::string aborted_by_;
  bool left_ = false;
};

}  // namespace tocsin::ranks
