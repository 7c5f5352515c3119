#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "ranks/socket.h"
#include "ranks/world.h"

namespace tocsin::ranks {

// Rank 0's coordinator: admits ranks with the same version, token, world size and parameters,
// hands out the roster, runs all-gather rounds, and turns any rank's failure or disappearance
// (control connection closed without "bye", or a round it never reached) into an abort sent to
// every rank. Runs in its own thread until every rank left or the job was aborted.
class Coordinator {
 public:
  Coordinator(WorldOptions options, Fd listener);
  void Run();
  // Makes Run() abort every rank with `reason` and return (rank 0 is stopping).
  void Stop(const std::string& reason);

 private:
  struct Client {
    Fd fd;
    Peer peer;
    bool joined = false;
    bool left = false;
    std::string payload;  // of the current round
    bool has_payload = false;
    int stalled_on = -1;  // the peer this rank reported waiting for in vain
    std::string stall_detail;
  };
  bool Admit();
  void Rounds();
  void Broadcast(const std::string& frame);
  // Tells every rank to stop; `culprit` is the rank to blame (-1: none known).
  void AbortAll(const std::string& reason, int culprit = -1);
  std::string StallVerdict(int& culprit);

  bool Stopped();  // the stop pipe is readable: rank 0 stops, everyone is told

  WorldOptions options_;
  Fd listener_;
  Fd stop_read_, stop_write_;
  std::mutex mu_;
  std::string stop_reason_;      // guarded by mu_
  std::vector<Client> clients_;  // by rank once joined
  std::vector<std::string> refused_;
};

}  // namespace tocsin::ranks
