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

// Accepts "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)"; nullopt otherwise.
std::optional<TimePoint> ParseRfc3339(std::string_view s);

inline TimePoint FromUnixSeconds(int64_t s) { return TimePoint(std::chrono::seconds(s)); }

}  // namespace tocsin
