#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tocsin::cli {

// Applies a YAML config file to the options of `cmd`, so that every key of the file is the flag
// of the same name. A mapping of flag names (without "--") to:
//   a scalar              listen: 0.0.0.0:9464      -> --listen 0.0.0.0:9464
//   a sequence            probe-path: [/a, /b]      -> --probe-path /a --probe-path /b
//   a mapping of scalars  interval: {rdma: 10s}     -> --interval rdma=10s
// A flag given on the command line wins over the file; for repeatable flags the file's values
// come first and the command line's after them (so a later TASK=... wins). Unknown keys, deeper
// nesting and values a flag refuses are errors naming the file and the key.
// (CLI11 2.1's own config files are read for the top-level app only.)
Status ApplyYamlConfig(CLI::App* cmd, const std::string& path);

// Pure: the (key, values) pairs of a config file's text, in file order; the errors above.
using ConfigItems = std::vector<std::pair<std::string, std::vector<std::string>>>;
Result<ConfigItems> ParseYamlConfig(std::string_view text, const std::string& file);

}  // namespace tocsin::cli
