#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <vector>

namespace tocsin::cli {

// CLI11 config files in YAML, so that every key of a config file is a flag of the same name
// (flags given on the command line win). A mapping of flag names (without "--") to:
//   a scalar            listen: 0.0.0.0:9464       -> --listen 0.0.0.0:9464
//   a sequence          probe-path: [/a, /b]       -> --probe-path /a --probe-path /b
//   a mapping of scalars interval: {rdma: 10s}    -> --interval rdma=10s
// Anything else (deeper nesting, a document that is not a mapping) is an error naming the key.
class YamlConfig : public CLI::Config {
 public:
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace tocsin::cli
