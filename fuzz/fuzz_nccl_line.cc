// The NCCL line parser: ParseLogLine on each line (and LineParser, whose header memo, keyword
// hint and vouched prefix, as LineReader::same_prefix gives it, must give the same fields: a
// difference traps), every message parser on its message, and the
// nccl-tests parser on the same lines (the analyzer's own logic is covered by unit tests; its
// JSON building would drown libFuzzer in features of header-only library code).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/strings.h"
#include "nccl/log_line.h"
#include "nccl/messages.h"
#include "nccl/perf_output.h"

using namespace tocsin::nccl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  PerfParser perf;
  LineParser memo;
  LineParser vouched;
  std::string_view last;  // the last line holding "NCCL ", fed to `vouched`
  for (auto line : tocsin::Split(text, '\n')) {
    perf.Feed(line);
    auto parsed = ParseLogLine(line);
    size_t at = line.find("NCCL ");  // as LineReader::word_at gives it
    auto memoized = memo.Parse(line, at);
    std::optional<LogLine> hinted;
    if (at != std::string_view::npos) {
      bool same = last.size() >= at + 5 && last.find("NCCL ") == at &&
                  line.substr(0, at + 5) == last.substr(0, at + 5);
      // The analyzer's shortcut for such a line: Parse's message, or nothing.
      auto reused = same ? vouched.ReusedInfoMessage(line, at) : std::nullopt;
      if (reused && (!parsed || parsed->kind != LineKind::kInfo || parsed->message != *reused)) {
        __builtin_trap();
      }
      hinted = vouched.Parse(line, at, same);
      last = line;
    }
    auto differs = [&](const std::optional<LogLine>& other) {
      return other->kind != parsed->kind || other->host != parsed->host ||
             other->pid != parsed->pid || other->tid != parsed->tid ||
             other->cuda_dev != parsed->cuda_dev || other->message != parsed->message;
    };
    if (parsed.has_value() != memoized.has_value()) __builtin_trap();
    if (at != std::string_view::npos && parsed.has_value() != hinted.has_value()) __builtin_trap();
    if (!parsed) continue;
    if (differs(memoized) || (hinted && differs(hinted))) __builtin_trap();
    std::string_view msg = parsed->message;
    ParseUsingNetwork(msg);
    ParseIbDevices(msg);
    IsIbNoDevice(msg);
    ParseSocketDevices(msg);
    ParsePluginFailure(msg);
    ParseOfiProvider(msg);
    if (auto ch = ParseChannel(msg)) IsRdmaNetwork(ch->net);
    // The one-pass reading of NCCL's layout against the token-by-token reference.
    auto init = ParseInitComplete(msg);
    auto reference = internal::ParseInitCompleteTokens(msg);
    if (init.has_value() != reference.has_value()) __builtin_trap();
    if (init && (init->rank != reference->rank || init->nranks != reference->nranks ||
                 init->cuda_dev != reference->cuda_dev || init->comm != reference->comm ||
                 init->comm_id != reference->comm_id)) {
      __builtin_trap();
    }
    ParseEnvSetting(msg);
    ParseVersion(msg);
    ClassifyWarn(msg);
  }
  for (const auto& run : perf.runs()) run.ComputedAvgBusbw();
  return 0;
}
