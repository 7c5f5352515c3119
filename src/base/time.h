#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tocsin {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// "2026-11-29T21:03:04Z" (UTC, whole seconds).
std::string FormatRfc3339(TimePoint t);

// Accepts "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)" for years 1900..2200; nullopt otherwise.
std::optional<TimePoint> ParseRfc3339(std::string_view s);

// Unix seconds that fit the clock (years 1900..2200).
inline constexpr int64_t kMinUnixSeconds = -2208988800;  // 1900-01-01
inline constexpr int64_t kMaxUnixSeconds = 7258118400;   // 2200-01-01
inline bool IsRepresentableUnixSeconds(int64_t s) {
  return s >= kMinUnixSeconds && s <= kMaxUnixSeconds;
}
// Callers validate with IsRepresentableUnixSeconds: out-of-range values overflow the clock.
inline TimePoint FromUnixSeconds(int64_t s) { return TimePoint(std::chrono::seconds(s)); }

}  // namespace tocsin

namespace tocsin {

// "500ms", "15s", "2m", "1h", "1.5s" or a bare number of seconds ("30"); nullopt otherwise
// (negative, empty, unknown unit, over a day).
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);

}  // namespace tocsin
