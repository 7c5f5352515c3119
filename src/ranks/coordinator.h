#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ranks/protocol.h"
#include "ranks/socket.h"
#include "ranks/world.h"

namespace tocsin::ranks {

// Rank 0's coordinator: admits ranks with the same token, version, world size and parameters,
// hands out the roster (with a per-run secret for the data connections), runs all-gather rounds,
// and turns any rank's failure or disappearance (control connection closed without "bye", a
// round it never reached, a malformed message) into an abort sent to every rank. Runs in its own
// thread until every rank left or the job was aborted.
//
// Admission is poll-driven: every joining connection is read as its bytes arrive, into a frame
// of at most kMaxHelloBytes; at most kMaxPending wait at once (the oldest gives way), and one
// that sends no hello within hello_timeout is dropped. Nothing about the job (version included)
// is said to a connection before its token matched.
class Coordinator {
 public:
  static constexpr size_t kMaxPending = 64;
  static constexpr size_t kMaxRefusalsKept = 8;

  Coordinator(WorldOptions options, Fd listener);
  void Run();
  // Makes Run() abort every rank with `reason` and return (rank 0 is stopping).
  void Stop(const std::string& reason);

 private:
  struct Client {
    Fd fd;
    Peer peer;
    FrameReader reader{kMaxFrameBytes};
    bool joined = false;   // its hello was accepted
    bool addressed = false;  // it published its data address
    bool left = false;
    std::string payload;  // of the current round
    bool has_payload = false;
    int stalled_on = -1;  // the peer this rank reported waiting for in vain
    std::string stall_detail;
  };
  struct Pending {
    Fd fd;
    std::string ip;
    Deadline expires;
    FrameReader reader{kMaxHelloBytes};
  };
  bool Admit();
  void AcceptSome(std::vector<Pending>& pending);
  // A joined rank's frame before the roster (its data address); false: the rendezvous ended.
  bool BeforeRoster(int rank);
  // Judges one complete hello; true when the rank joined.
  bool Consider(Pending& p, const std::string& frame);
  void Refuse(Pending& p, const std::string& why, const std::string& answer);
  std::string AdmissionTrouble() const;  // "; refused: ...; ..." for the abort reason
  void Rounds();
  // The rank sent something that is not the protocol: it is blamed and everyone stops.
  void Malformed(int rank, const Status& why);
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
  std::string secret_;           // the data plane's, for this run
  // Admission's account of what it turned away (kept short: strangers choose these).
  std::vector<std::string> refused_;
  size_t refused_count_ = 0;
  size_t silent_dropped_ = 0;  // sent no complete hello in time
  size_t evicted_ = 0;         // made room for newer connections
  std::string accept_error_;   // the last resource error of accept, e.g. EMFILE
  std::chrono::milliseconds accept_backoff_{0};
  std::optional<Deadline> accept_paused_until_;
};

}  // namespace tocsin::ranks
