#include "rdma/sysfs_parse.h"

#include <array>
#include <utility>

#include "base/strings.h"

namespace tocsin::rdma {
namespace {

bool IsLowerHexGroup(std::string_view g, size_t len) {
  if (g.size() != len) return false;
  for (char c : g) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> ParseHexGroups(std::string_view text, size_t groups, const char* what) {
  std::string_view t = Trim(text);
  auto parts = Split(t, ':');
  bool ok = parts.size() == groups;
  for (auto p : parts) ok = ok && IsLowerHexGroup(p, 4);
  if (!ok) {
    return Status::ParseError(std::string("expected a ") + what + " (" + std::to_string(groups) +
                              " groups of 4 hex digits), got " + Quote(t));
  }
  return std::string(t);
}

}  // namespace

Result<CodedState> ParseCodedState(std::string_view text) {
  std::string_view t = Trim(text);
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) {
    return Status::ParseError("expected \"<code>: <name>\", got " + Quote(t));
  }
  auto code = ParseInt64(t.substr(0, colon));
  std::string_view name = Trim(t.substr(colon + 1));
  if (!code || *code < 0 || *code > 255 || name.empty()) {
    return Status::ParseError("expected \"<code>: <name>\", got " + Quote(t));
  }
  return CodedState{static_cast<int>(*code), std::string(name)};
}

Result<LinkRate> ParseRate(std::string_view text) {
  std::string_view t = Trim(text);
  auto bad = [&] {
    return Status::ParseError("expected \"<n> Gb/sec (<w>X <speed>)\", got " + Quote(t));
  };
  size_t unit = t.find(" Gb/sec");
  if (unit == std::string_view::npos) return bad();
  auto gbps = ParseDouble(t.substr(0, unit));
  if (!gbps || *gbps < 0) return bad();
  LinkRate rate;
  rate.gbps = *gbps;
  std::string_view rest = Trim(t.substr(unit + 7));
  if (rest.empty()) return rate;
  if (rest.front() != '(' || rest.back() != ')') return bad();
  rest = Trim(rest.substr(1, rest.size() - 2));
  size_t x = rest.find('X');
  if (x == std::string_view::npos) return bad();
  auto width = ParseInt64(rest.substr(0, x));
  if (!width || *width <= 0 || *width > 64) return bad();
  rate.width = static_cast<int>(*width);
  rate.speed = std::string(Trim(rest.substr(x + 1)));
  return rate;
}

int CounterWidthBits(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 17> kWidths = {{
      {"symbol_error", 16},
      {"link_error_recovery", 8},
      {"link_downed", 8},
      {"port_rcv_errors", 16},
      {"port_rcv_remote_physical_errors", 16},
      {"port_rcv_switch_relay_errors", 16},
      {"port_xmit_discards", 16},
      {"port_xmit_constraint_errors", 8},
      {"port_rcv_constraint_errors", 8},
      {"local_link_integrity_errors", 4},
      {"excessive_buffer_overrun_errors", 4},
      {"VL15_dropped", 16},
      // 32 bits without extended counters (64 with them: saturation at 2^32-1 is then
      // practically impossible, so treating the 32-bit maximum as "at least" is safe).
      {"port_xmit_data", 32},
      {"port_rcv_data", 32},
      {"port_xmit_packets", 32},
      {"port_rcv_packets", 32},
      {"port_xmit_wait", 32},
  }};
  for (const auto& [n, w] : kWidths) {
    if (n == name) return w;
  }
  return 64;
}

Result<CounterValue> ParseCounter(std::string_view name, std::string_view text) {
  std::string_view t = Trim(text);
  if (t == "N/A (no PMA)") return CounterValue{};
  auto v = ParseUint64(t);
  if (!v) return Status::ParseError("expected a decimal counter, got " + Quote(t));
  CounterValue out;
  out.value = *v;
  int bits = CounterWidthBits(name);
  if (bits < 64) {
    uint64_t max = (uint64_t{1} << bits) - 1;
    if (*v > max && bits < 32) {
      return Status::ParseError(std::string(name) + " is a " + std::to_string(bits) +
                                "-bit counter, got " + std::to_string(*v));
    }
    out.saturated = *v == max;
  }
  return out;
}

Result<std::string> ParseGid(std::string_view text) { return ParseHexGroups(text, 8, "GID"); }

bool IsZeroGid(std::string_view gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

Result<std::string> ParseGuid(std::string_view text) { return ParseHexGroups(text, 4, "GUID"); }

}  // namespace tocsin::rdma
