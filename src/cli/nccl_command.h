#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin nccl FILE...`.
Command AddNcclCommand(CLI::App& parent);

}  // namespace tocsin::cli
