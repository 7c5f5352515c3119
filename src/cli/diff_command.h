#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin diff` (staging against production) and `tocsin snapshot` (what diff and
// audit read, in one file).
Command AddDiffCommand(CLI::App& parent);
Command AddSnapshotCommand(CLI::App& parent);

}  // namespace tocsin::cli
