#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tocsin::ranks {

// Checked reads of JSON that another rank (or a stranger) sent: never an exception, never an
// insertion, every value typed and bounded; errors name the key.
Result<nlohmann::json> ParsePeerJson(std::string_view text);  // a parse failure is an error
const nlohmann::json& Member(const nlohmann::json& object, const char* key);  // null if absent
Status StringField(const nlohmann::json& object, const char* key, size_t max, std::string& out);
Status IntField(const nlohmann::json& object, const char* key, int64_t lo, int64_t hi,
                int64_t& out);
Status IntField(const nlohmann::json& object, const char* key, int64_t lo, int64_t hi, int& out);
Status UintField(const nlohmann::json& object, const char* key, uint64_t hi, uint64_t& out);
// A finite number in [lo, hi].
Status NumberField(const nlohmann::json& object, const char* key, double lo, double hi,
                   double& out);

}  // namespace tocsin::ranks
