#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <utility>
#include <vector>

namespace tocsin::agent {

using Labels = std::vector<prometheus::ClientMetric::Label>;

// Builds metric families by hand for values the agent reads rather than counts (a sysfs counter
// is exported as it is, not incremented), in the data model of prometheus-cpp.
class Families {
 public:
  // Starts a family (or returns the one of the same name); later Add calls go to it.
  Families& Family(const std::string& name, const std::string& help, prometheus::MetricType type);
  // Adds a sample to the current family: the gauge, counter or untyped value by its type.
  Families& Add(Labels labels, double value);
  std::vector<prometheus::MetricFamily>& families() { return families_; }
  std::vector<prometheus::MetricFamily> Take() { return std::move(families_); }

 private:
  std::vector<prometheus::MetricFamily> families_;
  size_t current_ = 0;
};

}  // namespace tocsin::agent
