#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tocsin::nccl {

// Pure parsers for the NCCL INFO messages that reveal the transport (NCCL 2.4 to 2.30; the
// formats and their sources are in docs/FORMATS.md). Each returns nullopt for any other message.

// "Using network IB" -> "IB" ("Socket", "Libfabric", "AWS Libfabric", "gIB", "IBext_v8", ...).
std::optional<std::string> ParseUsingNetwork(std::string_view msg);

// "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>", with the 2.20-2.23
// fused form "[0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB}", the 2.30.7 ":rail:plane" suffix and the
// SHARP plugin's "/SHARP" after the link layer ("mlx5_0:1/IB/SHARP"). Each device is the triple
// name:port/link-layer; whatever follows the link layer is kept as flags. Views point into the
// message.
struct IbDevice {
  int index = 0;
  std::string_view name;
  int port = 0;
  std::string_view link_layer;  // "IB", "RoCE", "UNSPECIFIED"
  std::string_view flags;       // "" or "SHARP" (several are '/'-separated)
};
std::optional<std::vector<IbDevice>> ParseIbDevices(std::string_view msg);
// The same into `out` (cleared first; the analyzer reuses one vector): false when nullopt.
bool ParseIbDevices(std::string_view msg, std::vector<IbDevice>& out);

// "NET/IB : No device found."
bool IsIbNoDevice(std::string_view msg);

// "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>" -> {"eth0:10.0.0.1", ...}
std::optional<std::vector<std::string>> ParseSocketDevices(std::string_view msg);

// "Failed to initialize NET plugin IB" (2.27+) -> "IB"
std::optional<std::string> ParsePluginFailure(std::string_view msg);

// "NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)" and the older
// "NET/OFI Selected Provider is efa (found 16 nics)" -> "efa"
std::optional<std::string> ParseOfiProvider(std::string_view msg);

// "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", "Channel 01 : 2[c7000] ->
// 0[87000] [receive] via NET/IB/5", "Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0",
// "... via P2P/IPC", "... via SHM/direct/direct", "... via direct shared memory". The peers
// between " : " and " via " are not read (nothing uses them, and these are most of a big log's
// NCCL lines); an arrow between them is required. Views point into the message.
enum class Link { kNet, kIntraNode, kCollNet, kOther };  // NET; P2P or SHM; COLLNET; else
struct Channel {
  std::string_view direction;  // "send", "receive" or "" (P2P/SHM lines)
  std::string_view transport;  // "NET", "P2P", "SHM", "COLLNET"
  Link link = Link::kOther;    // the transport's class
  std::string_view net;        // for NET: the plugin name ("IB", "Socket", "AWS Libfabric", ...)
  bool gdr = false;            // "/GDRDMA"
};
std::optional<Channel> ParseChannel(std::string_view msg);

// "[ncclCommInitRank ]comm 0x55d5f0 rank 0 nranks 16 cudaDev 0 [nvmlDev 0] [busId 18000]
// [commId 0x6c1d...] - Init COMPLETE". Views point into the message.
struct InitComplete {
  int rank = -1;
  int nranks = -1;
  int cuda_dev = -1;
  std::string_view comm;     // pointer text
  std::string_view comm_id;  // 2.19+; empty before
};
std::optional<InitComplete> ParseInitComplete(std::string_view msg);
namespace internal {
// The same, token by token, for every length: what ParseInitComplete does for long messages, and
// the reference its faster path is checked against (unit tests, fuzz_nccl_line).
std::optional<InitComplete> ParseInitCompleteTokens(std::string_view msg);
}  // namespace internal

// "NCCL_IB_DISABLE set by environment to 1.", "NCCL_SOCKET_IFNAME set by environment to eth0",
// "NCCL_IB_HCA set to mlx5", "Comm config netName reset to NCCL_NET=Socket".
struct EnvSetting {
  std::string name;
  std::string value;
};
std::optional<EnvSetting> ParseEnvSetting(std::string_view msg);

// What NCCL does after printing a WARN line, from its source (docs/FORMATS.md lists each message
// with the file it comes from):
// kBenign: it goes on (an optional library missing before a fallback, a topology search pattern
//   not found before the simple order, an IB async event it only logs).
// kFatal: it returns an error (CUDACHECK's "Cuda failure", no NET plugin, no bootstrap interface,
//   a failed verbs or system call, ...).
// kUnknown: anything else; whether it failed init is told by what follows it in the log.
enum class WarnKind { kBenign, kFatal, kUnknown };
WarnKind ClassifyWarn(std::string_view msg);
const char* WarnKindName(WarnKind kind);  // "benign", "fatal", "unknown"

// "NCCL version 2.18.3+cuda12.2" -> "2.18.3"
std::optional<std::string> ParseVersion(std::string_view msg);

// True for NCCL network plugins that move data over RDMA (IB verbs, EFA, gIB).
bool IsRdmaNetwork(std::string_view net);
// True for NCCL's built-in TCP transport (the silent fallback).
inline bool IsSocketNetwork(std::string_view net) { return net == "Socket"; }

}  // namespace tocsin::nccl
