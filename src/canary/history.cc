#include "canary/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace tocsin::canary {
namespace {

using nlohmann::json;

int64_t Seconds(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

bool AllOf(std::string_view s, bool (*ok)(char)) { return std::all_of(s.begin(), s.end(), ok); }

bool LabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// ---- encoding ----

void PutTime(json& o, const char* key, const std::optional<TimePoint>& t) {
  if (t) o[key] = Seconds(*t);
}

json NodeJson(const std::string& name, const NodeRecord& r, bool with_state) {
  json o = {{"n", name}};
  PutTime(o, "p", r.last_pass);
  if (!with_state) return o;
  PutTime(o, "f", r.fail_since);
  if (r.blamed) {
    o["c"] = r.cause;
    o["w"] = r.partners;
  }
  return o;
}

json BlockJson(const BlockPair& key, const BlockPairRecord& r, bool with_state) {
  json o = {{"a", key.first}, {"b", key.second}};
  PutTime(o, "p", r.last_pass);
  if (!with_state) return o;
  PutTime(o, "f", r.fail_since);
  if (r.blamed) {
    o["c"] = r.cause;
    json pairs = json::array();
    for (const NodePair& p : r.pairs) pairs.push_back({p.first, p.second});
    o["w"] = std::move(pairs);
  }
  return o;
}

json FailureJson(const Failure& f) {
  return {{"a", f.a},       {"b", f.b},     {"x", f.block_a},
          {"y", f.block_b}, {"c", f.cause}, {"t", Seconds(f.at)}};
}

// Adds entries while they fit in `budget`, counting what does not.
struct Packer {
  size_t budget;
  size_t dropped = 0;
  bool Add(json& into, json entry) {
    size_t size = entry.dump().size() + 1;
    if (size > budget) {
      ++dropped;
      return false;
    }
    budget -= size;
    into.push_back(std::move(entry));
    return true;
  }
};

// ---- decoding ----

Status Bad(std::string_view what) {
  return Status::ParseError(fmt::format("canary history: {}", what));
}

Result<std::string> String(const json& o, const char* key, bool (*valid)(std::string_view),
                           std::string_view what) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return Bad(fmt::format("{} without \"{}\"", what, key));
  const std::string& s = it->get_ref<const std::string&>();
  if (!valid(s)) return Bad(fmt::format("{}: invalid \"{}\"", what, key));
  return s;
}

Result<std::optional<TimePoint>> Time(const json& o, const char* key, bool required,
                                      std::string_view what) {
  auto it = o.find(key);
  if (it == o.end()) {
    if (required) return Bad(fmt::format("{} without \"{}\"", what, key));
    return std::optional<TimePoint>();
  }
  if (!it->is_number_integer()) return Bad(fmt::format("{}: \"{}\" is not an integer", what, key));
  int64_t s =
      it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX ? INT64_MAX : it->get<int64_t>();
  if (!IsRepresentableUnixSeconds(s)) return Bad(fmt::format("{}: \"{}\" out of range", what, key));
  return std::optional<TimePoint>(FromUnixSeconds(s));
}

const json* Array(const json& doc, const char* key, size_t cap, Status* err) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) {
    *err = Bad(fmt::format("\"{}\" is not an array", key));
    return nullptr;
  }
  if (it->size() > cap) {
    *err = Bad(fmt::format("\"{}\" has {} entries, over {}", key, it->size(), cap));
    return nullptr;
  }
  return &*it;
}

// A record's "p" and "f", and its verdict: "c" and "w" together or neither ("f" with them).
template <typename Rec, typename Item, typename Parse>
Status DecodeRecord(const json& o, const std::string& what, Rec& r, std::vector<Item>& items,
                    size_t cap, Parse parse) {
  TOCSIN_ASSIGN_OR_RETURN(r.last_pass, Time(o, "p", false, what));
  TOCSIN_ASSIGN_OR_RETURN(r.fail_since, Time(o, "f", false, what));
  bool has_c = o.contains("c"), has_w = o.contains("w");
  if (has_c != has_w) return Bad(fmt::format("{}: \"c\" and \"w\" go together", what));
  if (!has_c) return Status::Ok();
  if (!r.fail_since) return Bad(fmt::format("{}: a verdict without \"f\"", what));
  TOCSIN_ASSIGN_OR_RETURN(r.cause, String(o, "c", ValidCause, what));
  const json& w = o["w"];
  if (!w.is_array() || w.size() > cap) return Bad(fmt::format("{}: bad \"w\"", what));
  for (const json& x : w) {
    std::optional<Item> item = parse(x);
    if (!item) return Bad(fmt::format("{}: bad entry in \"w\"", what));
    if (std::find(items.begin(), items.end(), *item) != items.end()) {
      return Bad(fmt::format("{}: duplicate in \"w\"", what));
    }
    items.push_back(std::move(*item));
  }
  r.blamed = true;
  return Status::Ok();
}

Status DecodeNodes(const json& arr, History& h) {
  for (const json& o : arr) {
    if (!o.is_object()) return Bad("a node that is not an object");
    TOCSIN_ASSIGN_OR_RETURN(auto name, String(o, "n", ValidNodeName, "node"));
    NodeRecord r;
    TOCSIN_RETURN_IF_ERROR(DecodeRecord(
        o, name, r, r.partners, kMaxPartners, [&](const json& x) -> std::optional<std::string> {
          if (!x.is_string() || !ValidNodeName(x.get_ref<const std::string&>()) ||
              x.get_ref<const std::string&>() == name) {
            return std::nullopt;
          }
          return x.get<std::string>();
        }));
    if (!h.nodes.emplace(name, std::move(r)).second) return Bad("node " + name + " twice");
  }
  return Status::Ok();
}

Status DecodeBlocks(const json& arr, History& h) {
  for (const json& o : arr) {
    if (!o.is_object()) return Bad("a block pair that is not an object");
    TOCSIN_ASSIGN_OR_RETURN(auto a, String(o, "a", ValidBlock, "block pair"));
    TOCSIN_ASSIGN_OR_RETURN(auto b, String(o, "b", ValidBlock, "block pair"));
    if (!(a < b)) return Bad(fmt::format("block pair {}/{} out of order", a, b));
    std::string what = a + "/" + b;
    BlockPairRecord r;
    TOCSIN_RETURN_IF_ERROR(
        DecodeRecord(o, what, r, r.pairs, kMaxPairs, [](const json& x) -> std::optional<NodePair> {
          if (!x.is_array() || x.size() != 2 || !x[0].is_string() || !x[1].is_string()) {
            return std::nullopt;
          }
          NodePair pair{x[0].get<std::string>(), x[1].get<std::string>()};
          if (!ValidNodeName(pair.first) || !ValidNodeName(pair.second) ||
              !(pair.first < pair.second)) {
            return std::nullopt;
          }
          return pair;
        }));
    if (!h.block_pairs.emplace(BlockPair{a, b}, std::move(r)).second) {
      return Bad("block pair " + what + " twice");
    }
  }
  return Status::Ok();
}

Status DecodeFailures(const json& arr, History& h) {
  for (const json& o : arr) {
    if (!o.is_object()) return Bad("a failure that is not an object");
    Failure f;
    TOCSIN_ASSIGN_OR_RETURN(auto a, String(o, "a", ValidNodeName, "failure"));
    TOCSIN_ASSIGN_OR_RETURN(auto b, String(o, "b", ValidNodeName, "failure"));
    if (!(a < b)) return Bad(fmt::format("failure {}/{} out of order", a, b));
    TOCSIN_ASSIGN_OR_RETURN(auto x, String(o, "x", ValidBlock, "failure"));
    TOCSIN_ASSIGN_OR_RETURN(auto y, String(o, "y", ValidBlock, "failure"));
    TOCSIN_ASSIGN_OR_RETURN(auto c, String(o, "c", ValidCause, "failure"));
    TOCSIN_ASSIGN_OR_RETURN(auto t, Time(o, "t", true, "failure"));
    if (!h.failures.empty() && *t < h.failures.back().at) return Bad("failures out of order");
    h.failures.push_back(
        {std::move(a), std::move(b), std::move(x), std::move(y), std::move(c), *t});
  }
  return Status::Ok();
}

}  // namespace

bool ValidNodeName(std::string_view s) {
  // RFC 1123 subdomain, as Kubernetes names nodes.
  if (s.empty() || s.size() > 253) return false;
  size_t label = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '.') {
      if (label == 0 || s[i - 1] == '-') return false;
      label = 0;
    } else if (alnum || (c == '-' && label > 0)) {
      if (++label > 63) return false;
    } else {
      return false;
    }
  }
  return s.back() != '-' && s.back() != '.';
}

bool ValidBlock(std::string_view s) { return s.size() <= 63 && AllOf(s, LabelChar); }

bool ValidCause(std::string_view s) { return !s.empty() && s.size() <= 128 && AllOf(s, LabelChar); }

std::string EncodeHistory(const History& h, size_t max_bytes, size_t* dropped) {
  constexpr size_t kEnvelope = 64;
  Packer pack{max_bytes > kEnvelope ? max_bytes - kEnvelope : 0};
  json nodes = json::array(), blocks = json::array(), failures = json::array();
  // 1. What a new leader cannot learn again quickly: verdicts and streaks, then the suspects.
  std::set<std::string> node_done;
  std::set<BlockPair> block_done;
  for (const auto& [name, r] : h.nodes) {
    if (r.blamed && pack.Add(nodes, NodeJson(name, r, true))) node_done.insert(name);
  }
  for (const auto& [key, r] : h.block_pairs) {
    if (r.blamed && pack.Add(blocks, BlockJson(key, r, true))) block_done.insert(key);
  }
  for (auto it = h.failures.rbegin(); it != h.failures.rend(); ++it) {
    pack.Add(failures, FailureJson(*it));  // newest first while packing
  }
  std::reverse(failures.begin(), failures.end());
  for (const auto& [name, r] : h.nodes) {
    if (!r.blamed && r.fail_since && pack.Add(nodes, NodeJson(name, r, true))) {
      node_done.insert(name);
    }
  }
  for (const auto& [key, r] : h.block_pairs) {
    if (!r.blamed && r.fail_since && pack.Add(blocks, BlockJson(key, r, true))) {
      block_done.insert(key);
    }
  }
  // 2. Last passes, newest first (the oldest are the first the planner re-tests anyway).
  std::vector<std::pair<TimePoint, const std::string*>> passes;
  for (const auto& [name, r] : h.nodes) {
    if (!node_done.contains(name) && r.last_pass) passes.push_back({*r.last_pass, &name});
  }
  std::stable_sort(passes.begin(), passes.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (const auto& [t, name] : passes) pack.Add(nodes, NodeJson(*name, h.nodes.at(*name), false));
  std::vector<std::pair<TimePoint, const BlockPair*>> block_passes;
  for (const auto& [key, r] : h.block_pairs) {
    if (!block_done.contains(key) && r.last_pass) block_passes.push_back({*r.last_pass, &key});
  }
  std::stable_sort(block_passes.begin(), block_passes.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (const auto& [t, key] : block_passes) {
    pack.Add(blocks, BlockJson(*key, h.block_pairs.at(*key), false));
  }
  if (dropped != nullptr) *dropped = pack.dropped;
  return json{{"version", 1}, {"nodes", nodes}, {"blocks", blocks}, {"failures", failures}}.dump();
}

Result<History> DecodeHistory(std::string_view text) {
  if (text.size() > kMaxHistoryInput) {
    return Bad(fmt::format("{} bytes, over {}", text.size(), kMaxHistoryInput));
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Bad("not a JSON object");
  auto v = doc.find("version");
  if (v == doc.end() || !v->is_number_integer() || v->get<int64_t>() != 1) {
    return Bad("not version 1");
  }
  History h;
  Status err;
  const json* nodes = Array(doc, "nodes", kMaxNodes, &err);
  if (nodes == nullptr) return err;
  const json* blocks = Array(doc, "blocks", kMaxBlockPairs, &err);
  if (blocks == nullptr) return err;
  const json* failures = Array(doc, "failures", kMaxFailures, &err);
  if (failures == nullptr) return err;
  TOCSIN_RETURN_IF_ERROR(DecodeNodes(*nodes, h));
  TOCSIN_RETURN_IF_ERROR(DecodeBlocks(*blocks, h));
  TOCSIN_RETURN_IF_ERROR(DecodeFailures(*failures, h));
  for (const Failure& f : h.failures) {
    if (f.a == f.b) return Bad("a failure of a node with itself");
  }
  return h;
}

}  // namespace tocsin::canary
