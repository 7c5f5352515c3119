#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "ranks/socket.h"
#include "ranks/world.h"

namespace tocsin::bench {

using ranks::Deadline;

// What carries the bytes; the report always says it.
struct TransportInfo {
  std::string kind;       // "tcp" (sockets, what NCCL falls back to) or "fabric" (libfabric)
  std::string provider;   // libfabric provider ("tcp;ofi_rxm", "verbs;ofi_rxm", "efa", ...)
  std::string fabric;     // libfabric fabric name
  std::string domain;     // libfabric domain (the NIC or interface)
  std::string interface;  // the network interface of the address used
  std::string ip;
  bool rdma = false;
  // Whether a receive matches only the peer it names (a TCP connection: the run's secret; a
  // libfabric endpoint: FI_DIRECTED_RECV, the addresses the authenticated coordinator handed
  // out). False: a provider without FI_DIRECTED_RECV, whose endpoint takes any sender's message.
  bool sources_checked = false;
  // TCP: how long a transfer with nothing to do polls its sockets before sleeping, and how many
  // bytes a receive waits for before it is woken (0: not applicable).
  int spin_us = 0;
  size_t wake_bytes = 0;
  std::string Describe() const;  // "tcp sockets on eth0 (10.77.0.1)"
};

// libfabric providers that move data by RDMA (kernel bypass); everything else here is sockets or
// shared memory.
bool IsRdmaProvider(const std::string& provider);

// One direction of one stream in an Exchange: `len` bytes sent to, or received from, rank `peer`.
struct Transfer {
  int peer;
  bool send;
  void* buf;  // read from when sending
  size_t len;
};

// Called for each completed slice of the receive at `index` in an Exchange's transfers, in
// order: `offset` and `len` within that receive (the last slice may be shorter).
using SliceDone = std::function<void(size_t index, size_t offset, size_t len)>;

// Hands every slice of the complete receive `transfers[i]` to `on_slice` (an empty one as one
// empty slice): for transports that cannot hand them over as they arrive.
void HandOverSlices(std::span<const Transfer> transfers, size_t slice, const SliceDone& on_slice);

// The data plane of one rank: connections to every other rank, and a concurrent send+receive.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const TransportInfo& info() const = 0;
  // What other ranks use to reach this one (published through the coordinator).
  virtual std::string address() const = 0;
  // Reaches every peer (by rank, this one included) before `deadline`. `secret` is the run's
  // (from the coordinator): a TCP connection that does not present it is dropped.
  virtual Status Connect(const std::vector<ranks::Peer>& peers, const std::string& secret,
                         Deadline deadline) = 0;
  // Sends `slen` bytes to rank `to` while receiving `rlen` bytes from rank `from` (either may be
  // -1). Buffers passed here must lie in the buffers given to RegisterBuffer. Errors name the
  // peer; an abort from the coordinator (control fd readable) ends the wait early.
  Status SendRecv(int to, const void* sbuf, size_t slen, int from, void* rbuf, size_t rlen,
                  Deadline deadline);
  // Every transfer at once (at most kMaxTransfers, at most one send and one receive per peer),
  // as SendRecv does for two. `slice` > 0: `on_slice` runs as each `slice` bytes of a receive
  // are in, while the other transfers go on (a transport that cannot deliver slices early calls
  // it once everything is in).
  static constexpr size_t kMaxTransfers = 4;
  virtual Status Exchange(std::span<const Transfer> transfers, size_t slice,
                          const SliceDone& on_slice, Deadline deadline) = 0;
  // The peer the last failure involved: waited for in vain, or whose connection broke (-1: none).
  int failed_peer() const { return failed_peer_; }
  // Memory the transport may need to register (RDMA NICs); a no-op for sockets.
  virtual Status RegisterBuffer(void* /*buf*/, size_t /*len*/) { return Status::Ok(); }

 protected:
  int failed_peer_ = -1;
};

// How the TCP transport waits. Defaults measured (docs/BENCHMARKS.md): woken at 1 MiB and
// spinning 50 us before sleeping, p2p streams 1.3-1.6x faster than woken per segment; the spin
// is what a rank with a core of its own wants (set 0 when ranks share cores).
struct TcpOptions {
  static constexpr int kDefaultSpinUs = 50;
  int spin_us = kDefaultSpinUs;
  size_t wake_bytes = 1 << 20;
};

// The spin for a rank of `world`: none when the ranks on this machine outnumber the CPUs this
// process may use, where one rank's spin takes the core another needs. Every rank is on this
// machine when they meet at a loopback coordinator (`--local`, whose ranks are started with
// 127.0.0.1; or a run on one host); otherwise one rank per machine is assumed.
int DefaultSpinUs(const ranks::WorldOptions& world);

// Plain TCP sockets on the interface of `ip` (a full mesh, one connection per pair).
Result<std::unique_ptr<Transport>> CreateTcpTransport(const std::string& ip, int rank,
                                                      int abort_fd,
                                                      const TcpOptions& options = {});

// libfabric reliable-datagram endpoint with tagged messages. `provider` empty: the first
// provider libfabric offers (RDMA NICs come first when present).
Result<std::unique_ptr<Transport>> CreateFabricTransport(const std::string& provider,
                                                         const std::string& ip, int rank,
                                                         int abort_fd);

// The providers libfabric offers for that endpoint here (what --provider may name), in its order.
Result<std::vector<std::string>> OfferedFabricProviders();

// The name of the interface that holds `ip` ("lo", "eth0"), or "" when none does.
std::string InterfaceOf(const std::string& ip);

}  // namespace tocsin::bench
