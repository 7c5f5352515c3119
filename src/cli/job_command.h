#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin job`.
Command AddJobCommand(CLI::App& parent);

}  // namespace tocsin::cli
