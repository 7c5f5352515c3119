#include "canary/scheduler_message.h"

#include "base/strings.h"

namespace tocsin::canary {

namespace {

constexpr std::string_view kAvailable = " nodes are available: ";

bool ParseCount(std::string_view s, int& out) {
  auto v = ParseInt64(s);
  if (!v || *v < 0 || *v > 1000000000) return false;
  out = static_cast<int>(*v);
  return true;
}

}  // namespace

SchedulerMessage ParseSchedulerMessage(std::string_view text) {
  SchedulerMessage m;
  size_t at = text.find(kAvailable);
  size_t slash = text.substr(0, at).find('/');
  if (at == std::string_view::npos || slash == std::string_view::npos) return m;
  if (!ParseCount(Trim(text.substr(0, slash)), m.available) ||
      !ParseCount(text.substr(slash + 1, at - slash - 1), m.total) || m.available > m.total) {
    return m;
  }
  std::string_view rest = text.substr(at + kAvailable.size());
  // The causes end at the first ". " (the preemption part follows) or the final '.'.
  size_t end = rest.find(". ");
  if (end != std::string_view::npos) rest = rest.substr(0, end);
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  for (std::string_view part : Split(rest, ',', true)) {
    part = Trim(part);
    size_t sp = part.find(' ');
    int count = 0;
    if (sp == std::string_view::npos || !ParseCount(part.substr(0, sp), count)) return {};
    std::string_view cause = Trim(part.substr(sp + 1));
    if (cause.empty()) return {};
    if (m.causes.size() >= kMaxSchedulerCauses) break;
    m.causes.emplace_back(EscapeControl(cause.substr(0, kMaxSchedulerCause)), count);
  }
  m.parsed = true;
  return m;
}

}  // namespace tocsin::canary
