#include "agent/families.h"

#include <stdexcept>
#include <utility>

namespace tocsin::agent {

Families& Families::Family(const std::string& name, const std::string& help,
                           prometheus::MetricType type) {
  for (size_t i = 0; i < families_.size(); ++i) {
    if (families_[i].name == name) {
      current_ = i;
      return *this;
    }
  }
  families_.push_back({name, help, type, {}});
  current_ = families_.size() - 1;
  return *this;
}

Families& Families::Add(Labels labels, double value) {
  if (families_.empty()) throw std::logic_error("Families::Add before Family");
  auto& f = families_[current_];
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  switch (f.type) {
    case prometheus::MetricType::Counter:
      m.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      m.gauge.value = value;
      break;
    default:
      m.untyped.value = value;
      break;
  }
  f.metric.push_back(std::move(m));
  return *this;
}

}  // namespace tocsin::agent
