#include "bench/verdict.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "ranks/peer_json.h"
#include "ranks/protocol.h"
#include "sys/write_file.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using ranks::Member;

// Text caps, the encoder's and the decoder's.
constexpr size_t kTransportBytes = 16;
constexpr size_t kProviderBytes = 64;
constexpr size_t kTestBytes = 32;
constexpr size_t kHostBytes = 255;
constexpr size_t kCheckBytes = 128;
constexpr size_t kSubjectBytes = 256;
constexpr size_t kMessageBytes = 1024;
constexpr size_t kErrorBytes = 512;
// Before entries are dropped: messages are cut down to this, subjects and hosts to kShortName,
// and ranks and findings beyond the first few go.
constexpr size_t kShortestMessage = 32;
constexpr size_t kShortName = 64;
constexpr size_t kFewRanks = 8;
constexpr size_t kFewFindings = 4;
constexpr double kMaxGbps = 1e9;
constexpr uint64_t kMaxTestBytes = 1ull << 40;
constexpr uint64_t kMaxCount = 1ull << 40;

// Cuts `s` to at most `max` bytes, not inside a UTF-8 sequence; true when it cut.
bool Cut(std::string& s, size_t max) {
  if (s.size() <= max) return false;
  s.resize(max);
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
  return true;
}

double Gbps(double v) { return std::isfinite(v) && v > 0 ? std::min(v, kMaxGbps) : 0; }

ordered_json Document(const Verdict& v) {
  ordered_json tests = ordered_json::array();
  for (const auto& t : v.tests) {
    tests.push_back({{"test", t.test},
                     {"busbw", Gbps(t.busbw)},
                     {"algbw", Gbps(t.algbw)},
                     {"bytes", std::min(t.bytes, kMaxTestBytes)}});
  }
  ordered_json ranks = ordered_json::array();
  for (const auto& r : v.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"node", r.node.empty() ? ordered_json() : ordered_json(r.node)}});
  }
  ordered_json findings = ordered_json::array();
  for (const auto& f : v.findings) {
    findings.push_back({{"check", f.check},
                        {"severity", SeverityName(f.severity)},
                        {"subject", f.subject},
                        {"message", f.message}});
  }
  ordered_json doc = {{"v", 1},
                      {"rank", v.rank},
                      {"world", v.world},
                      {"exit", v.exit},
                      {"transport", v.transport},
                      {"provider", v.provider},
                      {"rdma", v.rdma ? ordered_json(*v.rdma) : ordered_json()},
                      {"tests", tests},
                      {"ranks", ranks},
                      {"findings", findings},
                      {"trimmed", std::min(v.trimmed, kMaxCount)},
                      {"nodes_dropped", std::min(v.nodes_dropped, kMaxCount)}};
  if (!v.error.empty()) doc["error"] = v.error;
  return doc;
}

template <typename T>
uint64_t CapList(std::vector<T>& list, size_t max) {
  if (list.size() <= max) return 0;
  uint64_t dropped = list.size() - max;
  list.resize(max);
  return dropped;
}

bool Printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// A check id as the project writes them: lowercase, digits, '.', '-', '_'.
bool IsCheckId(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  });
}

bool Present(const json& j, const char* key) { return !Member(j, key).is_null(); }

// An optional list: absent or null is empty; otherwise an array of at most `max` objects.
Result<const json*> List(const json& j, const char* key, size_t max) {
  const json& v = Member(j, key);
  static const json kEmpty = json::array();
  if (v.is_null()) return &kEmpty;
  if (!v.is_array()) return Status::ParseError(std::string(key) + " is not an array");
  if (v.size() > max) {
    return Status::ParseError(std::string(key) + " has " + std::to_string(v.size()) +
                              " entries (at most " + std::to_string(max) + ")");
  }
  for (const auto& e : v) {
    if (!e.is_object()) return Status::ParseError(std::string(key) + ": an entry is not an object");
  }
  return &v;
}

Status DecodeTest(const json& j, VerdictTest& t) {
  for (Status st : {ranks::StringField(j, "test", kTestBytes, t.test),
                    ranks::NumberField(j, "busbw", 0, kMaxGbps, t.busbw),
                    ranks::NumberField(j, "algbw", 0, kMaxGbps, t.algbw),
                    ranks::UintField(j, "bytes", kMaxTestBytes, t.bytes)}) {
    if (!st.ok()) return st;
  }
  if (!IsCheckId(t.test)) return Status::ParseError("test is not a test name");
  return Status::Ok();
}

Status DecodeRank(const json& j, int world, VerdictRank& r) {
  int hi = world > 0 ? world - 1 : ranks::kMaxWorldSize - 1;  // 0: unknown
  for (Status st : {ranks::IntField(j, "rank", 0, hi, r.rank),
                    ranks::StringField(j, "host", kHostBytes, r.host)}) {
    if (!st.ok()) return st;
  }
  if (!Printable(r.host)) return Status::ParseError("host has unprintable bytes");
  if (Present(j, "node")) {
    if (Status st = ranks::StringField(j, "node", ranks::kMaxNodeNameBytes, r.node); !st.ok()) {
      return st;
    }
    if (!r.node.empty() && !ranks::IsNodeName(r.node)) {
      return Status::ParseError("node is not a Kubernetes node name");
    }
  }
  return Status::Ok();
}

Status DecodeFinding(const json& j, VerdictFinding& f) {
  std::string severity;
  for (Status st : {ranks::StringField(j, "check", kCheckBytes, f.check),
                    ranks::StringField(j, "severity", 16, severity),
                    ranks::StringField(j, "subject", kSubjectBytes, f.subject),
                    ranks::StringField(j, "message", kMessageBytes, f.message)}) {
    if (!st.ok()) return st;
  }
  if (!IsCheckId(f.check)) return Status::ParseError("check is not a check id");
  auto s = ParseSeverity(severity);
  if (!s) return Status::ParseError("severity \"" + Quote(severity, 16) + "\" is not one");
  f.severity = *s;
  return Status::Ok();
}

Status DecodeFields(const json& j, Verdict& v) {
  int version = 0;
  if (Status st = ranks::IntField(j, "v", 0, INT32_MAX, version); !st.ok()) return st;
  if (version != 1) {
    return Status::ParseError("version " + std::to_string(version) + " (this tocsin reads 1)");
  }
  for (Status st : {ranks::IntField(j, "world", 0, ranks::kMaxWorldSize, v.world),
                    ranks::IntField(j, "rank", -1, ranks::kMaxWorldSize - 1, v.rank),
                    ranks::IntField(j, "exit", 0, 255, v.exit),
                    ranks::StringField(j, "transport", kTransportBytes, v.transport)}) {
    if (!st.ok()) return st;
  }
  if (v.world > 0 && v.rank >= v.world) {
    return Status::ParseError("rank " + std::to_string(v.rank) + " is not below world " +
                              std::to_string(v.world));
  }
  if (v.transport != "tcp" && v.transport != "fabric" && !v.transport.empty()) {
    return Status::ParseError("transport \"" + Quote(v.transport, 16) +
                              "\" is not tcp, fabric or \"\"");
  }
  if (Present(j, "provider")) {
    if (Status st = ranks::StringField(j, "provider", kProviderBytes, v.provider); !st.ok()) {
      return st;
    }
    if (!Printable(v.provider)) return Status::ParseError("provider has unprintable bytes");
  }
  const json& rdma = Member(j, "rdma");
  if (rdma.is_boolean()) {
    v.rdma = rdma.get<bool>();
  } else if (!rdma.is_null()) {
    return Status::ParseError("rdma is not true, false or null");
  }
  if (Present(j, "trimmed")) {
    if (Status st = ranks::UintField(j, "trimmed", kMaxCount, v.trimmed); !st.ok()) return st;
  }
  if (Present(j, "nodes_dropped")) {
    if (Status st = ranks::UintField(j, "nodes_dropped", kMaxCount, v.nodes_dropped); !st.ok()) {
      return st;
    }
  }
  if (Present(j, "error")) {
    if (Status st = ranks::StringField(j, "error", kErrorBytes, v.error); !st.ok()) return st;
  }
  return Status::Ok();
}

// Decodes each entry of a list with `one`; errors name the list and the index.
template <typename T, typename F>
Status DecodeList(const json& j, const char* key, size_t max, std::vector<T>& out, F one) {
  auto list = List(j, key, max);
  if (!list.ok()) return list.status();
  for (size_t i = 0; i < (*list)->size(); ++i) {
    T entry;
    if (Status st = one((**list)[i], entry); !st.ok()) {
      return st.WithPrefix(std::string(key) + "[" + std::to_string(i) + "]");
    }
    out.push_back(std::move(entry));
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeVerdict(const Verdict& in, size_t max_bytes) {
  Verdict v = in;
  uint64_t trimmed = CapList(v.tests, kMaxVerdictTests) + CapList(v.ranks, kMaxVerdictRanks) +
                     CapList(v.findings, kMaxVerdictFindings);
  trimmed += Cut(v.transport, kTransportBytes) + Cut(v.provider, kProviderBytes) +
             Cut(v.error, kErrorBytes);
  for (auto& t : v.tests) trimmed += Cut(t.test, kTestBytes);
  for (auto& r : v.ranks) {
    trimmed += Cut(r.host, kHostBytes);
    if (!r.node.empty() && !ranks::IsNodeName(r.node)) {
      r.node.clear();
      ++trimmed;
    }
  }
  std::vector<bool> cut_message;
  for (auto& f : v.findings) {
    trimmed += Cut(f.check, kCheckBytes) + Cut(f.subject, kSubjectBytes);
    cut_message.push_back(Cut(f.message, kMessageBytes));
    trimmed += cut_message.back();
  }
  size_t message_cap = kMessageBytes;
  // What goes first when it does not fit: message length, long subjects and hosts, ranks beyond
  // the first few, findings beyond the worst few, then whole entries (tests last).
  auto shorter_messages = [&] {
    bool longer = std::any_of(v.findings.begin(), v.findings.end(), [&](const auto& f) {
      return f.message.size() > message_cap / 2;
    });
    if (!longer || message_cap / 2 < kShortestMessage) return false;
    message_cap /= 2;
    for (size_t i = 0; i < v.findings.size(); ++i) {
      if (Cut(v.findings[i].message, message_cap) && !cut_message[i]) {
        cut_message[i] = true;
        ++trimmed;
      }
    }
    return true;
  };
  auto shorter_names = [&] {
    uint64_t before = trimmed;
    for (auto& f : v.findings) trimmed += Cut(f.subject, kShortName);
    for (auto& r : v.ranks) trimmed += Cut(r.host, kShortName);
    return trimmed != before;
  };
  // All entries beyond `keep` at once, or the last one when keep is 0.
  auto drop_beyond = [&](auto& list, size_t keep) {
    if (list.size() <= keep) return false;
    trimmed += CapList(list, keep > 0 ? keep : list.size() - 1);
    cut_message.resize(v.findings.size());
    return true;
  };
  for (;;) {
    v.trimmed = in.trimmed + trimmed;
    std::string text = Document(v).dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() <= max_bytes) return text;
    if (shorter_messages() || shorter_names() || drop_beyond(v.ranks, kFewRanks) ||
        drop_beyond(v.findings, kFewFindings) || drop_beyond(v.findings, 0) ||
        drop_beyond(v.ranks, 0) || drop_beyond(v.tests, 0)) {
      continue;
    }
    if (v.error.size() <= kShortestMessage) return text;  // as short as a verdict gets
    trimmed += Cut(v.error, kShortestMessage);
  }
}

Result<Verdict> DecodeVerdict(std::string_view text) {
  if (text.size() > kMaxVerdictBytes) {
    return Status::ParseError("verdict: " + std::to_string(text.size()) + " bytes (at most " +
                              std::to_string(kMaxVerdictBytes) + ")");
  }
  auto j = ranks::ParsePeerJson(text);
  if (!j.ok()) return j.status().WithPrefix("verdict");
  if (!j->is_object()) return Status::ParseError("verdict: not a JSON object");
  Verdict v;
  Status st = DecodeFields(*j, v);
  if (st.ok()) st = DecodeList(*j, "tests", kMaxVerdictTests, v.tests, DecodeTest);
  if (st.ok()) {
    st = DecodeList(*j, "ranks", kMaxVerdictRanks, v.ranks,
                    [&v](const json& e, VerdictRank& r) { return DecodeRank(e, v.world, r); });
  }
  if (st.ok()) st = DecodeList(*j, "findings", kMaxVerdictFindings, v.findings, DecodeFinding);
  if (!st.ok()) return st.WithPrefix("verdict");
  return v;
}

Verdict VerdictOf(const Report& report, int rank, int world, int exit,
                  const std::string& transport, const VerdictRank& self) {
  Verdict v;
  // What the flags said may be out of range (that was the usage error): unknown then.
  v.rank = rank >= 0 && rank < ranks::kMaxWorldSize ? rank : -1;
  v.world = world >= 0 && world <= ranks::kMaxWorldSize ? world : 0;
  if (v.world > 0 && v.rank >= v.world) v.world = 0;
  v.exit = std::clamp(exit, 0, 255);
  v.transport = transport == "tcp" || transport == "fabric" ? transport : "";
  const json& inv = report.inventory;
  const json& t = Member(inv, "transport");
  if (Member(t, "kind").is_string()) v.transport = t["kind"].get<std::string>();
  if (Member(t, "provider").is_string()) v.provider = t["provider"].get<std::string>();
  if (Member(t, "rdma").is_boolean()) v.rdma = t["rdma"].get<bool>();
  if (v.transport == "tcp") {  // sockets: never RDMA, whether or not they came up
    v.provider = "tcp";
    v.rdma = false;
  }
  const json& tests = Member(inv, "tests");
  for (auto it = tests.begin(); tests.is_object() && it != tests.end(); ++it) {
    VerdictTest vt;
    vt.test = it.key();
    const json& avg = Member(*it, "avg_busbw_gbps");
    vt.busbw = avg.is_number() ? avg.get<double>() : 0;
    const json& rows = Member(*it, "rows");
    double algbw = 0;
    size_t n = 0;
    for (const auto& row : rows.is_array() ? rows : json::array()) {
      const json& a = Member(row, "algbw_gbps");
      const json& size = Member(row, "size");
      if (a.is_number()) {
        algbw += a.get<double>();
        ++n;
      }
      if (size.is_number_integer() && size.get<int64_t>() > 0) {
        vt.bytes = std::max(vt.bytes, size.get<uint64_t>());
      }
    }
    vt.algbw = n > 0 ? algbw / n : 0;
    v.tests.push_back(vt);
  }
  const json& ranks = Member(inv, "ranks");
  for (const auto& r : ranks.is_array() ? ranks : json::array()) {
    VerdictRank vr;
    if (Member(r, "rank").is_number_integer()) vr.rank = r["rank"].get<int>();
    if (Member(r, "host").is_string()) vr.host = r["host"].get<std::string>();
    if (Member(r, "node").is_string()) vr.node = r["node"].get<std::string>();
    if (Member(r, "node_dropped") == json(true)) ++v.nodes_dropped;
    v.ranks.push_back(vr);
  }
  if (v.ranks.empty() && v.rank >= 0) {
    v.ranks.push_back(self);
    v.ranks.back().rank = v.rank;
    if (!ranks::IsNodeName(self.node)) v.ranks.back().node.clear();
  }
  std::vector<Finding> findings = report.findings;
  SortFindings(findings);
  for (const auto& f : findings) v.findings.push_back({f.check, f.severity, f.subject, f.message});
  return v;
}

Status WriteVerdictFile(const std::string& path, std::string_view text) {
  return WriteUserFile(path, text, "--verdict-file");
}

}  // namespace tocsin::bench
