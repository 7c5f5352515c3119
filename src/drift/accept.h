#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/finding.h"
#include "base/status.h"
#include "base/time.h"

namespace tocsin::drift {

// One accepted difference (`tocsin diff --accept FILE`, README.md):
//   - match: {check: drift.plugin.image, subject: "device plugin *"}   # or match: CHECK-GLOB
//     reason: staging tries v1.5.2 first
//     expires: 2026-12-31            # a date (the end of that day, UTC) or an RFC 3339 time
// Globs are fnmatch(3) patterns ('*', '?', '[...]'); an absent subject matches any.
struct Acceptance {
  std::string check = "*";
  std::string subject = "*";
  std::string reason;
  TimePoint expires;
};

// A YAML list of entries, or a map with one key `accept` holding the list. Caps: 1 MiB of text,
// 1,000 entries, nesting bounded; every entry needs a match, a reason and an expiry. Errors
// name the entry.
inline constexpr size_t kMaxAcceptBytes = 1024 * 1024;
inline constexpr size_t kMaxAcceptEntries = 1000;
Result<std::vector<Acceptance>> ParseAcceptFile(std::string_view yaml);

// Each finding the first unexpired entry matches becomes info: its message starts with
// "accepted until DATE (REASON): ", its evidence gains {"accepted": {"reason", "expires",
// "severity": the one it had}}. A finding whose only matching entries have expired stays as it
// was, with {"acceptance_expired": DATE} in its evidence.
void ApplyAcceptances(std::vector<Finding>& findings, const std::vector<Acceptance>& accepted,
                      TimePoint now);

}  // namespace tocsin::drift
