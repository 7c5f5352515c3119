#include "base/finding.h"

namespace tocsin {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError, Severity::kCritical}) {
    if (SeverityName(s) == name) return s;
  }
  return std::nullopt;
}

Finding UnknownFinding(std::string check, std::string subject, const std::string& path,
                       const Status& error) {
  Finding f;
  f.check = std::move(check);
  f.severity = Severity::kWarning;
  f.subject = std::move(subject);
  f.message = "cannot evaluate: " + error.message();
  f.evidence = {{"result", "unknown"}, {"path", path}, {"error", error.ToString()}};
  return f;
}

}  // namespace tocsin
