#pragma once

#include <vector>

#include "cli/node_command.h"

namespace tocsin::cli {

// `tocsin bench net` (fabric benchmark across ranks, nccl-tests style).
std::vector<Command> AddBenchCommands(CLI::App& parent);

}  // namespace tocsin::cli
