#include "cli/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <utility>
#include <vector>

#include "sys/env.h"

namespace tocsin::cli {
namespace {

Result<ConfigItems> ParseItems(const YAML::Node& root, const std::string& file) {
  ConfigItems items;
  if (root.IsNull()) return items;
  if (!root.IsMap()) return Status::InvalidArgument(file + ": expected a mapping of flag names");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) {
      return Status::InvalidArgument(file + ": keys must be flag names such as listen");
    }
    std::string name = kv.first.Scalar();
    std::vector<std::string> inputs;
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      inputs = {v.Scalar()};
    } else if (v.IsSequence()) {
      for (const auto& e : v) {
        if (!e.IsScalar()) {
          return Status::InvalidArgument(file + ": " + name + ": expected a list of plain values");
        }
        inputs.push_back(e.Scalar());
      }
    } else if (v.IsMap()) {
      for (const auto& e : v) {
        if (!e.first.IsScalar() || !e.second.IsScalar()) {
          return Status::InvalidArgument(file + ": " + name +
                                         ": expected a mapping of plain values (name: value)");
        }
        inputs.push_back(e.first.Scalar() + "=" + e.second.Scalar());
      }
    } else {
      return Status::InvalidArgument(file + ": " + name + ": has no value");
    }
    items.emplace_back(std::move(name), std::move(inputs));
  }
  return items;
}

}  // namespace

Result<ConfigItems> ParseYamlConfig(std::string_view text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ": not valid YAML: " + e.what());
  }
  return ParseItems(root, file);
}

Status ApplyYamlConfig(CLI::App* cmd, const std::string& path) {
  auto text = ReadRegularFile(path);
  if (!text.ok()) return Status::InvalidArgument("--config " + text.status().message());
  auto items = ParseYamlConfig(*text, path);
  if (!items.ok()) return items.status().WithPrefix("--config");
  for (const auto& [name, inputs] : *items) {
    CLI::Option* opt = cmd->get_option_no_throw("--" + name);
    if (opt == nullptr || name == "config" || name == "help") {
      return Status::InvalidArgument("--config " + path + ": unknown key \"" + name +
                                     "\" (keys are the flags of tocsin " + cmd->get_name() +
                                     ", see --help)");
    }
    bool repeatable = opt->get_expected_max() > 1;
    if (opt->count() > 0 && !repeatable) continue;  // the command line wins
    if (!repeatable && inputs.size() != 1) {
      return Status::InvalidArgument("--config " + path + ": " + name + ": expected one value");
    }
    if (inputs.empty()) continue;  // an empty list: nothing to add
    CLI::results_t given = opt->results();
    opt->clear();
    opt->add_result(inputs);
    opt->add_result(given);
    try {
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return Status::InvalidArgument("--config " + path + ": " + name + ": " + e.what());
    }
  }
  return Status::Ok();
}

}  // namespace tocsin::cli
