#pragma once

#include <prometheus/collectable.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "controller/controller.h"

namespace tocsin::controller {

// On every scrape: the active findings and their onsets, a status per check id, the informers'
// health and cache sizes, and leadership. Reads only memory.
class Controller::Collector : public prometheus::Collectable {
 public:
  Collector(const std::vector<std::unique_ptr<Informer>>* informers, const ObjectCache* cache,
            std::function<bool()> leader);
  std::vector<prometheus::MetricFamily> Collect() const override;
  void Publish(Published published);

 private:
  const std::vector<std::unique_ptr<Informer>>* informers_;
  const ObjectCache* cache_;
  std::function<bool()> leader_;
  mutable std::mutex mu_;
  Published published_;
};

}  // namespace tocsin::controller
