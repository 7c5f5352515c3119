#pragma once

#include <vector>

#include "base/report.h"
#include "nccl/analyzer.h"

namespace tocsin::nccl {

// The `-o table` layout: one row per NCCL process, one per nccl-tests run.
std::vector<Table> Tables(const Analyzer& analyzer);

}  // namespace tocsin::nccl
