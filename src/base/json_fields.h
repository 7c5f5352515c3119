#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/time.h"

namespace tocsin {

// Lenient readers of hostile JSON objects (a plugin's output, the canary ConfigMap, Jobs listed
// back): a field missing or of another type reads as absent or "", a string is cut at `max` bytes.
inline std::optional<TimePoint> TimeField(const nlohmann::json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_string()) return std::nullopt;
  return ParseRfc3339(o[key].get_ref<const std::string&>());
}

inline std::string StringField(const nlohmann::json& o, const char* key,
                               size_t max = std::string::npos) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_string()) return "";
  const std::string& s = o[key].get_ref<const std::string&>();
  return s.size() > max ? s.substr(0, max) : s;
}

}  // namespace tocsin
