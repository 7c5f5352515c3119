#include "cli/number_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tocsin::cli {

CLI::Validator Number(double min, double max) {
  std::string range = fmt::format("{:g} to {:g}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& v) {
        char* end = nullptr;
        errno = 0;
        double d = std::strtod(v.c_str(), &end);
        bool number = end != v.c_str() && *end == '\0' && errno != ERANGE && std::isfinite(d);
        return number && d >= min && d <= max
                   ? std::string()
                   : "must be a number from " + range + ", got \"" + v + "\"";
      },
      "NUMBER " + range);
}

CLI::Validator Seconds() { return Number(0.001, 86400); }

CLI::Validator Count(long long min, long long max) {
  std::string range = fmt::format("{} to {}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& v) {
        char* end = nullptr;
        errno = 0;
        long long n = std::strtoll(v.c_str(), &end, 10);
        bool number = end != v.c_str() && *end == '\0' && errno != ERANGE;
        return number && n >= min && n <= max
                   ? std::string()
                   : "must be a whole number from " + range + ", got \"" + v + "\"";
      },
      "INT " + range);
}

}  // namespace tocsin::cli
