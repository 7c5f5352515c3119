#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin::ranks {

// What one rank may send the coordinator, and what the coordinator hands back. Everything here
// comes from the network and is decoded as hostile: every field typed and bounded, errors say
// which field is wrong (never an exception, never a crash).

// A frame before the sender authenticated: room for parameters that carry a path of PATH_MAX
// (bench storage --path) beside the rest of the hello.
inline constexpr size_t kMaxParamsBytes = 8192;
inline constexpr size_t kMaxHelloBytes = 12288;
inline constexpr size_t kMaxFrameBytes = 64 << 20;  // any frame after (ReadFrame's cap)
inline constexpr size_t kMaxPayloadBytes = 1 << 20;  // one rank's all-gather payload
inline constexpr size_t kMaxReasonBytes = 512;      // a reason or detail a rank sends, cut there
inline constexpr int kMaxWorldSize = 4096;
inline constexpr size_t kRunSecretBytes = 32;       // hex characters of the per-run data secret

struct Peer {
  int rank = -1;
  std::string host;          // hostname
  std::string ip;            // the rank's address as the coordinator saw it
  std::string address;       // what the rank published for its data plane
  std::string node;          // its Kubernetes node name ($TOCSIN_NODE_NAME), "" when unknown
  bool node_dropped = false;  // it sent a node name that is not one (dropped, counted)
  std::string Name() const;  // "rank 2 (node-c 10.77.0.3)"
};

// `text` as a JSON string carries it between ranks: invalid UTF-8 replaced by U+FFFD.
std::string AsSent(const std::string& text);

inline constexpr size_t kMaxNodeNameBytes = 253;
// Whether `name` is a Kubernetes node name: a DNS subdomain (RFC 1123: lowercase alphanumeric
// labels, '-' inside them, joined by '.') of at most kMaxNodeNameBytes.
bool IsNodeName(std::string_view name);

// Reassembles one length-prefixed frame (u32 little-endian length, then the bytes) from a
// non-blocking socket. A header announcing more than `max_bytes` is refused as soon as it
// arrives: nothing is allocated for it, and never more than one frame is buffered.
class FrameReader {
 public:
  explicit FrameReader(size_t max_bytes) : max_(max_bytes) {}
  // Bytes still missing for the current frame (the header's first).
  size_t Wanted() const;
  // Takes at most Wanted() bytes of the stream; ParseError when the header is over the cap.
  Status Add(std::string_view bytes);
  bool Complete() const { return header_done_ && buf_.size() == length_; }
  // The complete frame; the reader starts on the next one.
  std::string Take();
  // Reads what the socket holds now, up to the end of the current frame, without waiting.
  // IoError when the peer closed, ParseError on an oversized frame; `what` names the peer.
  Status ReadFrom(int fd, const std::string& what);
  size_t buffered() const { return buf_.size(); }

 private:
  size_t max_;
  unsigned char header_[4] = {0, 0, 0, 0};
  size_t header_got_ = 0;
  bool header_done_ = false;
  size_t length_ = 0;
  std::string buf_;
};

// A joining rank's first frame, sent as soon as it connected (a connection that stays silent is
// dropped); its data address follows in a kAddress message once its data plane is up.
struct Hello {
  std::string version;
  std::string token;
  int rank = -1;
  int world_size = -1;
  std::string params;
  std::string host;
  std::string address;
  std::string node;  // optional; one that is not a node name is dropped ("") and marked
  bool node_dropped = false;
};
std::string EncodeHello(const Hello& hello);
Result<Hello> DecodeHello(std::string_view frame);

// A joined rank's frames to the coordinator.
struct Message {
  enum class Type { kAddress, kGather, kStall, kAbort, kBye };
  Type type = Type::kBye;
  std::string payload;  // kGather; kAddress: the rank's data address
  int peer = -1;        // kStall: the rank waited on, in [0, world_size)
  std::string text;     // kStall's detail, kAbort's reason (cut at kMaxReasonBytes)
};
Result<Message> DecodeMessage(std::string_view frame, int world_size);

// The coordinator's frames to the ranks.
std::string EncodeRoster(const std::vector<Peer>& peers, const std::string& secret);
// The peers by rank (exactly world_size, rank i at i) and the per-run data-plane secret.
Result<std::vector<Peer>> DecodeRoster(std::string_view frame, int world_size,
                                       std::string& secret);
Result<std::vector<std::string>> DecodeGathered(std::string_view frame, int world_size);

// Compares secrets in time that depends on their lengths only, never on where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);
// kRunSecretBytes random hex characters (from the kernel's generator).
std::string NewRunSecret();

}  // namespace tocsin::ranks
