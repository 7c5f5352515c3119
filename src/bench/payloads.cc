#include "bench/payloads.h"

#include <algorithm>
#include <cstdlib>

#include "base/strings.h"

#include "ranks/peer_json.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;
using ranks::IntField;
using ranks::Member;
using ranks::NumberField;
using ranks::StringField;
using ranks::UintField;

constexpr double kMaxMicros = 1e15;  // about 30 years: any longer is not a measurement
constexpr uint64_t kMaxCount = uint64_t{1} << 50;

Result<json> ParseArray(std::string_view text) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ranks::ParsePeerJson(text));
  if (!j.is_array()) return Status::ParseError("not a JSON array");
  return j;
}

Status At(size_t i, const Status& st) {
  return st.ok() ? st : st.WithPrefix("entry " + std::to_string(i));
}

}  // namespace

std::string EncodeSizeResults(const std::vector<SizeResult>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    out.push_back({{"bytes", r.bytes}, {"count", r.count}, {"us", r.us}, {"wrong", r.wrong},
                   {"cpu_us", r.cpu_us}});
  }
  return out.dump();
}

Result<std::vector<SizeResult>> DecodeSizeResults(std::string_view text,
                                                  const std::vector<SizeResult>& want) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseArray(text));
  if (j.size() != want.size()) {
    return Status::ParseError(std::to_string(j.size()) + " sizes, want " +
                              std::to_string(want.size()));
  }
  std::vector<SizeResult> out;
  for (size_t i = 0; i < j.size(); ++i) {
    SizeResult r;
    for (Status st : {UintField(j[i], "bytes", kMaxCount, r.bytes),
                      UintField(j[i], "count", kMaxCount, r.count),
                      NumberField(j[i], "us", 0, kMaxMicros, r.us),
                      IntField(j[i], "wrong", -1, INT64_MAX, r.wrong),
                      NumberField(j[i], "cpu_us", 0, kMaxMicros, r.cpu_us)}) {
      if (!st.ok()) return At(i, st);
    }
    if (r.bytes != want[i].bytes || r.count != want[i].count) {
      return At(i, Status::ParseError("size " + std::to_string(r.bytes) + ", want " +
                                       std::to_string(want[i].bytes)));
    }
    out.push_back(r);
  }
  return out;
}

std::string EncodeP2p(const std::vector<P2pRecord>& records) {
  json out = json::array();
  for (const auto& r : records) {
    switch (r.kind) {
      case P2pRecord::Kind::kWrong:
        out.push_back({{"wrong", r.wrong}});
        break;
      case P2pRecord::Kind::kLatency:
        out.push_back({{"a", r.a}, {"b", r.b}, {"latency_us", r.us}});
        break;
      case P2pRecord::Kind::kStream:
        out.push_back(
            {{"a", r.a}, {"b", r.b}, {"from", r.from}, {"bytes", r.bytes}, {"us", r.us}});
        break;
    }
  }
  return out.dump();
}

Result<std::vector<P2pRecord>> DecodeP2p(std::string_view text, int sender, int world_size,
                                         const std::vector<size_t>& sizes) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ParseArray(text));
  // At most: a latency and both directions of every size for each pair, and one wrong count.
  size_t most = static_cast<size_t>(world_size) * (1 + 2 * sizes.size()) + 1;
  if (j.size() > most) {
    return Status::ParseError(std::to_string(j.size()) + " records, at most " +
                              std::to_string(most));
  }
  std::vector<P2pRecord> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& m = j[i];
    P2pRecord r;
    if (!m.is_object()) return At(i, Status::ParseError("not an object"));
    if (m.contains("wrong")) {
      r.kind = P2pRecord::Kind::kWrong;
      if (Status st = IntField(m, "wrong", -1, INT64_MAX, r.wrong); !st.ok()) return At(i, st);
      out.push_back(r);
      continue;
    }
    for (Status st : {IntField(m, "a", 0, world_size - 1, r.a),
                      IntField(m, "b", 0, world_size - 1, r.b)}) {
      if (!st.ok()) return At(i, st);
    }
    if (r.a >= r.b) return At(i, Status::ParseError("pair " + std::to_string(r.a) + "-" +
                                                    std::to_string(r.b) + " is not a < b"));
    if (m.contains("latency_us")) {
      r.kind = P2pRecord::Kind::kLatency;
      if (Status st = NumberField(m, "latency_us", 0, kMaxMicros, r.us); !st.ok()) {
        return At(i, st);
      }
      if (r.a != sender) return At(i, Status::ParseError("a latency of a pair it does not lead"));
      out.push_back(r);
      continue;
    }
    r.kind = P2pRecord::Kind::kStream;
    for (Status st : {IntField(m, "from", 0, world_size - 1, r.from),
                      UintField(m, "bytes", kMaxCount, r.bytes),
                      NumberField(m, "us", 0, kMaxMicros, r.us)}) {
      if (!st.ok()) return At(i, st);
    }
    if (r.from != sender || (r.from != r.a && r.from != r.b)) {
      return At(i, Status::ParseError("a direction it did not send"));
    }
    if (std::find(sizes.begin(), sizes.end(), r.bytes) == sizes.end()) {
      return At(i, Status::ParseError("size " + std::to_string(r.bytes) + " was not run"));
    }
    out.push_back(r);
  }
  return out;
}

json PhaseJson(const PhaseResult& p) {
  return {{"phase", p.name},
          {"bytes", p.bytes},
          {"ops", p.ops},
          {"seconds", p.seconds},
          {"gbps", p.gbps()},
          {"iops", p.iops()},
          {"latency", ToJson(p.latency)},
          {"wrong", p.wrong < 0 ? json() : json(p.wrong)},
          {"note", p.note}};
}

std::string EncodePhases(const std::string& host, const std::vector<PhaseResult>& phases) {
  json list = json::array();
  for (const auto& p : phases) list.push_back(PhaseJson(p));
  return json{{"host", host}, {"phases", list}}.dump();
}

Result<std::vector<PhaseResult>> DecodePhases(std::string_view text,
                                              const std::vector<std::string>& names) {
  TOCSIN_ASSIGN_OR_RETURN(json j, ranks::ParsePeerJson(text));
  const json& list = Member(j, "phases");
  if (!list.is_array() || list.size() != names.size()) {
    return Status::ParseError("phases: want a list of " + std::to_string(names.size()));
  }
  std::vector<PhaseResult> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& p = list[i];
    const json& l = Member(p, "latency");
    PhaseResult r;
    for (Status st :
         {StringField(p, "phase", 64, r.name), UintField(p, "bytes", kMaxCount, r.bytes),
          UintField(p, "ops", kMaxCount, r.ops), NumberField(p, "seconds", 0, 1e9, r.seconds),
          StringField(p, "note", 1024, r.note), UintField(l, "count", kMaxCount, r.latency.count),
          NumberField(l, "mean_us", 0, kMaxMicros, r.latency.mean),
          NumberField(l, "p50_us", 0, kMaxMicros, r.latency.p50),
          NumberField(l, "p90_us", 0, kMaxMicros, r.latency.p90),
          NumberField(l, "p99_us", 0, kMaxMicros, r.latency.p99),
          NumberField(l, "p999_us", 0, kMaxMicros, r.latency.p999),
          NumberField(l, "max_us", 0, kMaxMicros, r.latency.max)}) {
      if (!st.ok()) return At(i, st);
    }
    if (!Member(p, "wrong").is_null()) {
      if (Status st = IntField(p, "wrong", 0, INT64_MAX, r.wrong); !st.ok()) return At(i, st);
    }
    if (r.name != names[i]) {
      return At(i, Status::ParseError("phase " + r.name + ", want " + names[i]));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string MaybeCorrupt(int rank, std::string payload) {
  const char* spec = std::getenv("TOCSIN_TEST_FAULT");
  if (spec == nullptr) return payload;
  std::string_view v(spec);
  if (v.substr(0, 8) != "payload:") return payload;
  v.remove_prefix(8);
  size_t colon = v.find(':');
  if (colon == std::string_view::npos || ParseInt64(v.substr(0, colon)) != rank) return payload;
  return std::string(v.substr(colon + 1));
}

}  // namespace tocsin::bench
