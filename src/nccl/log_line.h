#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tocsin::nccl {

enum class LineKind { kInfo, kWarn, kVersion };

// One NCCL debug line. Views point into the caller's line buffer.
struct LogLine {
  LineKind kind = LineKind::kInfo;
  std::string_view host;  // empty for a bare "NCCL version ..." line (NCCL_DEBUG=VERSION)
  int64_t pid = -1;
  int64_t tid = -1;
  int cuda_dev = -1;         // the bracketed number: the CUDA device of the thread, not the rank
  std::string_view message;  // the text after "NCCL INFO " / "NCCL WARN "
};

// Pure: finds "NCCL INFO" / "NCCL WARN" anywhere in the line, so launcher prefixes
// ("[1,7]<stdout>:", "[0] ", "[pod/name/container] ") and NCCL 2.26+ timestamps before
// "host:pid:tid [dev]" are skipped. WARN lines carry "file:line [(func)]" before the keyword.
// nullopt for any other line.
std::optional<LogLine> ParseLogLine(std::string_view line);

}  // namespace tocsin::nccl
