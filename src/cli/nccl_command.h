#pragma once

#include "cli/node_command.h"

namespace tocsin::cli {

// Registers `tocsin nccl FILE...`.
Command AddNcclCommand(CLI::App& parent);

}  // namespace tocsin::cli
