#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "nccl/analyzer.h"

namespace tocsin::nccl {

// Reading NCCL logs into an Analyzer: the one place that splits a log into lines (with
// LineReader), for `tocsin nccl` and the agent's nccl task alike.

// Regular files at least this large are read in parallel chunks by ReadLog.
constexpr uint64_t kParallelMinBytes = 32ull << 20;

// Called with each event FeedLine reports (`--follow`), as soon as its line is read.
using EventFn = std::function<void(const nlohmann::json&)>;

struct ReadOptions {
  int threads = 1;   // > 1: a large regular file is read in parallel chunks
  EventFn on_event;  // set: every line is read in order and its events reported
  Options analyzer;  // the chunks' analyzers are built with these
};

// Reads the whole input `fd` (a file, a pipe, stdin) as one input named `name` into `analyzer`:
// in order, or, for a regular file of at least kParallelMinBytes with threads > 1 and no
// on_event, in chunks by `threads` threads, merged in order (the same result). A read error is
// returned.
Status ReadLog(int fd, const std::string& name, const ReadOptions& options, Analyzer& analyzer);

// Where a log that grows (a pod's log) was read up to.
struct LogCursor {
  uint64_t offset = 0;        // bytes consumed: up to the end of the last complete line
  bool in_long_line = false;  // the line at offset was cut: its rest is skipped
};

// Reads the complete lines appended to the regular file `fd` (of `size` bytes) since `cursor`,
// at most about `budget` bytes, into `analyzer`'s current input, and advances the cursor. An
// unterminated last line waits for the next call, unless it is longer than a line may be (64
// KiB): then it is cut, as ReadLog cuts it, and its rest skipped. A read error is returned, the
// cursor left where the last complete read left it.
Status ReadAppended(int fd, uint64_t size, uint64_t budget, LogCursor& cursor, Analyzer& analyzer);

}  // namespace tocsin::nccl
