#pragma once

#include <CLI/CLI.hpp>

namespace tocsin::cli {

// Registers `tocsin node`; the returned callback runs it after parsing and gives the exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command AddNodeCommand(CLI::App& parent);

}  // namespace tocsin::cli
