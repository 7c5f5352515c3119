#include "ranks/protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "base/strings.h"
#include "ranks/peer_json.h"

namespace tocsin::ranks {
namespace {

using nlohmann::json;

// A reason or detail: any string, cut at kMaxReasonBytes (a rank's words are quoted, not
// trusted, but an honest rank's long reason still gets through in part).
std::string Reason(const json& j, const char* key) {
  const json& v = Member(j, key);
  if (!v.is_string()) return "";
  std::string s = v.get<std::string>();
  if (s.size() > kMaxReasonBytes) s = s.substr(0, kMaxReasonBytes) + "...";
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = ' ';
  }
  return s;
}

Result<json> ParseObject(std::string_view frame) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParsePeerJson(frame));
  if (!j.is_object()) return Status::ParseError("not a JSON object");
  return j;
}

std::string TypeOf(const json& j) {
  const json& t = Member(j, "type");
  return t.is_string() ? t.get<std::string>() : "";
}

}  // namespace

bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  for (std::string_view label : Split(name, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
  }
  return true;
}

namespace {

// The optional "node" of a hello or roster entry: a node name, else dropped and marked.
void NodeField(const json& j, std::string& node, bool& dropped) {
  const json& v = Member(j, "node");
  node.clear();
  dropped = false;
  if (v.is_null()) return;
  if (v.is_string() && IsNodeName(v.get_ref<const std::string&>())) {
    node = v.get<std::string>();
  } else {
    dropped = !(v.is_string() && v.get_ref<const std::string&>().empty());
  }
}

}  // namespace

std::string Peer::Name() const {
  return "rank " + std::to_string(rank) + " (" + host + (ip.empty() ? "" : " " + ip) + ")";
}

size_t FrameReader::Wanted() const {
  return header_done_ ? length_ - buf_.size() : sizeof header_ - header_got_;
}

Status FrameReader::Add(std::string_view bytes) {
  if (bytes.size() > Wanted()) return Status::Internal("FrameReader: more bytes than wanted");
  if (!header_done_) {
    std::memcpy(header_ + header_got_, bytes.data(), bytes.size());
    header_got_ += bytes.size();
    if (header_got_ < sizeof header_) return Status::Ok();
    length_ = header_[0] | (header_[1] << 8) | (header_[2] << 16) | (size_t(header_[3]) << 24);
    if (length_ > max_) {
      return Status::ParseError("a frame of " + std::to_string(length_) + " bytes (at most " +
                                std::to_string(max_) + " here)");
    }
    header_done_ = true;
    buf_.reserve(length_);
    return Status::Ok();
  }
  buf_.append(bytes);
  return Status::Ok();
}

std::string FrameReader::Take() {
  std::string out = std::move(buf_);
  buf_.clear();
  header_got_ = 0;
  header_done_ = false;
  length_ = 0;
  return out;
}

Status FrameReader::ReadFrom(int fd, const std::string& what) {
  char chunk[16384];
  while (!Complete()) {
    size_t want = std::min(Wanted(), sizeof chunk);
    ssize_t n = recv(fd, chunk, want, 0);
    if (n == 0) return Status::IoError(what + ": connection closed");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      return Status::IoError(what + ": recv: " + strerror(errno));
    }
    Status st = Add(std::string_view(chunk, static_cast<size_t>(n)));
    if (!st.ok()) return st.WithPrefix(what);
  }
  return Status::Ok();
}

std::string AsSent(const std::string& text) {
  return json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace))
      .get<std::string>();
}

std::string EncodeHello(const Hello& h) {
  return json{{"type", "hello"},         {"version", h.version}, {"token", h.token},
              {"rank", h.rank},          {"world_size", h.world_size},
              {"params", h.params},      {"host", h.host},       {"address", h.address},
              {"node", h.node}}
      // A --path that is not UTF-8 travels with its bad bytes replaced (U+FFFD) instead of
      // throwing: every rank replaces them the same way, so their parameters still compare.
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Hello> DecodeHello(std::string_view frame) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseObject(frame));
  if (TypeOf(j) != "hello") return Status::ParseError("not a hello");
  Hello h;
  for (Status st : {StringField(j, "version", 64, h.version),
                    StringField(j, "token", 1024, h.token),
                    IntField(j, "rank", -1, kMaxWorldSize, h.rank),
                    IntField(j, "world_size", 0, kMaxWorldSize, h.world_size),
                    StringField(j, "params", kMaxParamsBytes, h.params),
                    StringField(j, "host", 255, h.host),
                    StringField(j, "address", 512, h.address)}) {
    if (!st.ok()) return st;
  }
  // These end up in every rank's report (a finding's subject names the host): printable only.
  for (const std::string* text : {&h.version, &h.host, &h.address}) {
    for (char c : *text) {
      if (c < 0x20 || c > 0x7e) return Status::ParseError("a field with unprintable bytes");
    }
  }
  NodeField(j, h.node, h.node_dropped);
  return h;
}

Result<Message> DecodeMessage(std::string_view frame, int world_size) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseObject(frame));
  std::string type = TypeOf(j);
  Message m;
  if (type == "address") {
    m.type = Message::Type::kAddress;
    if (Status st = StringField(j, "address", 512, m.payload); !st.ok()) return st;
  } else if (type == "gather") {
    m.type = Message::Type::kGather;
    if (Status st = StringField(j, "payload", kMaxPayloadBytes, m.payload); !st.ok()) return st;
  } else if (type == "stall") {
    m.type = Message::Type::kStall;
    if (Status st = IntField(j, "peer", 0, world_size - 1, m.peer); !st.ok()) return st;
    m.text = Reason(j, "detail");
  } else if (type == "abort") {
    m.type = Message::Type::kAbort;
    m.text = Reason(j, "reason");
  } else if (type == "bye") {
    m.type = Message::Type::kBye;
  } else {
    return Status::ParseError("unknown message type " + Member(j, "type").dump().substr(0, 40));
  }
  return m;
}

std::string EncodeRoster(const std::vector<Peer>& peers, const std::string& secret) {
  json roster = {{"type", "roster"}, {"secret", secret}, {"peers", json::array()}};
  for (const auto& p : peers) {
    roster["peers"].push_back({{"rank", p.rank},
                               {"host", p.host},
                               {"ip", p.ip},
                               {"address", p.address},
                               {"node", p.node},
                               {"node_dropped", p.node_dropped}});
  }
  return roster.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<Peer>> DecodeRoster(std::string_view frame, int world_size,
                                       std::string& secret) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseObject(frame));
  if (Status st = StringField(j, "secret", 1024, secret); !st.ok()) return st;
  const json& list = Member(j, "peers");
  if (!list.is_array() || static_cast<int>(list.size()) != world_size) {
    return Status::ParseError("roster of " + std::to_string(list.size()) + " ranks, want " +
                              std::to_string(world_size));
  }
  std::vector<Peer> peers;
  for (const auto& p : list) {
    if (!p.is_object()) return Status::ParseError("a roster entry is not an object");
    Peer peer;
    for (Status st : {IntField(p, "rank", 0, world_size - 1, peer.rank),
                      StringField(p, "host", 255, peer.host), StringField(p, "ip", 64, peer.ip),
                      StringField(p, "address", 512, peer.address)}) {
      if (!st.ok()) return st;
    }
    NodeField(p, peer.node, peer.node_dropped);
    peer.node_dropped = peer.node_dropped || Member(p, "node_dropped") == json(true);
    if (peer.rank != static_cast<int>(peers.size())) {
      return Status::ParseError("roster entry " + std::to_string(peers.size()) + " is rank " +
                                std::to_string(peer.rank));
    }
    peers.push_back(std::move(peer));
  }
  return peers;
}

Result<std::vector<std::string>> DecodeGathered(std::string_view frame, int world_size) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseObject(frame));
  const json& list = Member(j, "payloads");
  if (!list.is_array() || static_cast<int>(list.size()) != world_size) {
    return Status::ParseError("all-gather of " + std::to_string(list.size()) + " payloads, want " +
                              std::to_string(world_size));
  }
  std::vector<std::string> out;
  for (const auto& p : list) {
    if (!p.is_string()) return Status::ParseError("an all-gather payload is not a string");
    out.push_back(p.get<std::string>());
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of `a` is visited whatever `b` is; only the lengths leak (secrets here have a
  // fixed length or are the user's choice).
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(a[i]) ^ y;
  }
  return diff == 0;
}

std::string NewRunSecret() {
  std::random_device rd;  // getrandom(2) on Linux
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  while (out.size() < kRunSecretBytes) {
    uint32_t v = rd();
    for (int i = 0; i < 8 && out.size() < kRunSecretBytes; ++i, v >>= 4) out += kHex[v & 15];
  }
  return out;
}

}  // namespace tocsin::ranks
