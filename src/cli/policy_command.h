#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin policy`.
Command AddPolicyCommand(CLI::App& parent);

}  // namespace tocsin::cli
