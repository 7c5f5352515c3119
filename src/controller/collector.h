#pragma once

#include <prometheus/collectable.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "controller/controller.h"

namespace tocsin::controller {

// On every scrape: the active findings and their onsets, a status per check id, the informers'
// health and cache sizes, and leadership. Reads only memory.
class Controller::Collector : public prometheus::Collectable {
 public:
  Collector(const std::vector<std::unique_ptr<Informer>>* informers, std::mutex* informers_mu,
            const ObjectCache* cache, std::function<bool()> leader,
            std::chrono::milliseconds resync, std::vector<std::string> check_ids);
  std::vector<prometheus::MetricFamily> Collect() const override;
  void Publish(std::shared_ptr<const Published> published);

 private:
  const std::vector<std::unique_ptr<Informer>>* informers_;
  std::mutex* informers_mu_;
  std::chrono::milliseconds resync_;
  const ObjectCache* cache_;
  std::function<bool()> leader_;
  std::vector<std::string> check_ids_;  // a tocsin_check_status series each
  mutable std::mutex mu_;
  std::shared_ptr<const Published> published_ = std::make_shared<Published>();
};

}  // namespace tocsin::controller
