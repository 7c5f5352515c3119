#include "cli/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <sstream>

namespace tocsin::cli {
namespace {

[[noreturn]] void Fail(const std::string& why) { throw CLI::ConversionError("config", why); }

}  // namespace

std::string YamlConfig::to_config(const CLI::App* app, bool default_also, bool write_description,
                                  std::string prefix) const {
  // Written as YAML: one "name: value" line per option that has a value.
  std::ostringstream out;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->get_lnames().empty() || !opt->get_configurable()) continue;
    std::string name = prefix + opt->get_lnames().front();
    std::vector<std::string> values = opt->reduced_results();
    if (values.empty() && default_also && !opt->get_default_str().empty()) {
      values = {opt->get_default_str()};
    }
    if (values.empty()) continue;
    if (write_description && !opt->get_description().empty()) {
      out << "# " << opt->get_description() << "\n";
    }
    if (values.size() == 1) {
      out << name << ": " << YAML::Dump(YAML::Node(values.front())) << "\n";
    } else {
      out << name << ":\n";
      for (const auto& v : values) out << "  - " << YAML::Dump(YAML::Node(v)) << "\n";
    }
  }
  return out.str();
}

std::vector<CLI::ConfigItem> YamlConfig::from_config(std::istream& input) const {
  YAML::Node root;
  try {
    root = YAML::Load(input);
  } catch (const YAML::Exception& e) {
    Fail(std::string("not valid YAML: ") + e.what());
  }
  std::vector<CLI::ConfigItem> out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) Fail("expected a mapping of flag names to values");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) Fail("keys must be flag names such as listen");
    CLI::ConfigItem item;
    item.name = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      item.inputs = {v.Scalar()};
    } else if (v.IsSequence()) {
      for (const auto& e : v) {
        if (!e.IsScalar()) Fail(item.name + ": expected a list of plain values");
        item.inputs.push_back(e.Scalar());
      }
    } else if (v.IsMap()) {
      for (const auto& e : v) {
        if (!e.first.IsScalar() || !e.second.IsScalar()) {
          Fail(item.name + ": expected a mapping of plain values (name: value)");
        }
        item.inputs.push_back(e.first.Scalar() + "=" + e.second.Scalar());
      }
    } else {
      Fail(item.name + ": has no value");
    }
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace tocsin::cli
