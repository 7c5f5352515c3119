#include "ranks/peer_json.h"

#include <algorithm>
#include <cmath>

namespace tocsin::ranks {

using nlohmann::json;

Result<json> ParsePeerJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::ParseError("not JSON");
  return j;
}

const json& Member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

Status StringField(const json& object, const char* key, size_t max, std::string& out) {
  const json& v = Member(object, key);
  if (!v.is_string()) return Status::ParseError(std::string(key) + " is not a string");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max) {
    return Status::ParseError(std::string(key) + " of " + std::to_string(s.size()) +
                              " bytes (at most " + std::to_string(max) + ")");
  }
  out = s;
  return Status::Ok();
}

Status IntField(const json& object, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  const json& v = Member(object, key);
  if (!v.is_number_integer()) return Status::ParseError(std::string(key) + " is not an integer");
  bool in_range = v.is_number_unsigned()
                      ? hi >= 0 && v.get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                            static_cast<int64_t>(v.get<uint64_t>()) >= lo
                      : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!in_range) {
    return Status::ParseError(std::string(key) + " " + v.dump() + " is out of range " +
                              std::to_string(lo) + ".." + std::to_string(hi));
  }
  out = v.get<int64_t>();
  return Status::Ok();
}

Status IntField(const json& object, const char* key, int64_t lo, int64_t hi, int& out) {
  int64_t v = 0;
  Status st = IntField(object, key, std::max<int64_t>(lo, INT32_MIN),
                       std::min<int64_t>(hi, INT32_MAX), v);
  if (st.ok()) out = static_cast<int>(v);
  return st;
}

Status UintField(const json& object, const char* key, uint64_t hi, uint64_t& out) {
  const json& v = Member(object, key);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    return Status::ParseError(std::string(key) + " is not a count");
  }
  if (v.get<uint64_t>() > hi) {
    return Status::ParseError(std::string(key) + " " + v.dump() + " is above " +
                              std::to_string(hi));
  }
  out = v.get<uint64_t>();
  return Status::Ok();
}

Status NumberField(const json& object, const char* key, double lo, double hi, double& out) {
  const json& v = Member(object, key);
  if (!v.is_number()) return Status::ParseError(std::string(key) + " is not a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return Status::ParseError(std::string(key) + " " + v.dump() + " is out of range");
  }
  out = d;
  return Status::Ok();
}

}  // namespace tocsin::ranks
