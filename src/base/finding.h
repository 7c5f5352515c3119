#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"

namespace tocsin {

enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kCritical = 3 };

std::string_view SeverityName(Severity s);
std::optional<Severity> ParseSeverity(std::string_view name);

// One result of one check. `check` ids are public API: stable, dotted, lowercase.
struct Finding {
  std::string check;
  Severity severity = Severity::kInfo;
  std::string subject;  // node, device/port, PCI address, mount point, ...
  std::string message;
  std::optional<TimePoint> since;  // onset of the condition, when it can be known
  nlohmann::json evidence = nlohmann::json::object();  // the raw values behind the finding
};

// A check that could not read its input: severity warning, evidence
// {"result": "unknown", "path": path, "error": error}. Never a silent "healthy".
Finding UnknownFinding(std::string check, std::string subject, const std::string& path,
                       const Status& error);

}  // namespace tocsin
