#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin node`.
Command AddNodeCommand(CLI::App& parent);

}  // namespace tocsin::cli
