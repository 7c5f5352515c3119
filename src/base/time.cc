#include "base/time.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>

#include "base/strings.h"

namespace tocsin {

std::string FormatRfc3339(TimePoint t) {
  std::time_t secs = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<TimePoint> ParseRfc3339(std::string_view s) {
  // Fixed positions: YYYY-MM-DDTHH:MM:SS
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](size_t pos, size_t len) { return ParseInt64(s.substr(pos, len)); };
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
       se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  // system_clock counts nanoseconds in 64 bits: years outside ~1678..2262 would overflow.
  if (*y < 1900 || *y > 2200) return std::nullopt;
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 60) {
    return std::nullopt;
  }
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return std::nullopt;
  }
  int64_t offset = 0;
  std::string_view zone = s.substr(i);
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    auto oh = ParseInt64(zone.substr(1, 2));
    auto om = ParseInt64(zone.substr(4, 2));
    if (!oh || !om) return std::nullopt;
    offset = (*oh * 3600 + *om * 60) * (zone[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  std::chrono::year_month_day ymd{std::chrono::year(static_cast<int>(*y)),
                                  std::chrono::month(static_cast<unsigned>(*mo)),
                                  std::chrono::day(static_cast<unsigned>(*d))};
  if (!ymd.ok()) return std::nullopt;
  auto days = std::chrono::sys_days(ymd);
  return TimePoint(days) + std::chrono::hours(*h) + std::chrono::minutes(*mi) +
         std::chrono::seconds(*se) - std::chrono::seconds(offset);
}

}  // namespace tocsin

namespace tocsin {

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  size_t split = 0;
  while (split < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.')) {
    ++split;
  }
  std::string number(text.substr(0, split));
  std::string_view unit = text.substr(split);
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1) return std::nullopt;
  double value = std::strtod(number.c_str(), nullptr);
  double scale;
  if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60000;
  } else if (unit == "h") {
    scale = 3600000;
  } else {
    return std::nullopt;
  }
  double ms = value * scale;
  if (!(ms >= 0) || ms > 86400000.0) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(ms + 0.5));
}

}  // namespace tocsin
