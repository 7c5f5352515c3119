#pragma once

// Shared by the `tocsin nccl` integration tests: the fixture logs and a JSON run on them.
#include <string>
#include <vector>

#include "run_binary.h"

namespace tocsin::testing {

inline const std::string kNcclLogs = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata/";

// `tocsin nccl -o json` on fixture logs (`-` stays stdin), with `extra` flags.
inline JsonRun Nccl(std::vector<std::string> files, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"nccl", "-o", "json"};
  for (const auto& f : files) args.push_back(f == "-" ? f : kNcclLogs + f);
  args.insert(args.end(), extra.begin(), extra.end());
  return RunTocsinJson(args);
}

}  // namespace tocsin::testing
