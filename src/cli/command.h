#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tocsin::cli {

// A registered subcommand: Add<Name>Command(parent) adds its flags to `app`, and `run` runs it
// after parsing and gives the exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

}  // namespace tocsin::cli
