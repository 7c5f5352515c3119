#include "controller/collector.h"

#include <map>
#include <set>
#include <tuple>

#include "agent/families.h"

namespace tocsin::controller {

using prometheus::MetricType;

Controller::Collector::Collector(const std::vector<std::unique_ptr<Informer>>* informers,
                                 std::mutex* informers_mu, const ObjectCache* cache,
                                 std::function<bool()> leader, std::chrono::milliseconds resync,
                                 std::vector<std::string> check_ids)
    : informers_(informers),
      informers_mu_(informers_mu),
      resync_(resync),
      cache_(cache),
      leader_(std::move(leader)),
      check_ids_(std::move(check_ids)) {}

void Controller::Collector::Publish(std::shared_ptr<const Published> published) {
  std::lock_guard lock(mu_);
  published_ = std::move(published);
}

std::vector<prometheus::MetricFamily> Controller::Collector::Collect() const {
  agent::Families f;
  std::shared_ptr<const Published> shared;
  {
    std::lock_guard lock(mu_);
    shared = published_;  // shared, not copied: an evaluation replaces it whole
  }
  const Published& p = *shared;
  bool synced = true, watching = true;  // of the informers the checks read
  f.Family("tocsin_controller_watch_up", "1 while the resource's watch is established.",
           MetricType::Gauge);
  std::vector<std::pair<const Resource*, InformerStats>> stats;
  std::lock_guard informers_lock(*informers_mu_);
  for (const auto& inf : *informers_) {
    stats.push_back({&inf->resource(), inf->stats()});
    if (!inf->resource().checked) continue;
    synced &= stats.back().second.synced;
    watching &= stats.back().second.watch_up;
  }
  for (const auto& [r, s] : stats) f.Add({{"resource", r->name}}, s.watch_up ? 1 : 0);
  f.Family("tocsin_controller_objects", "Objects of the resource in the controller's cache.",
           MetricType::Gauge);
  for (const auto& [r, s] : stats) {
    f.Add({{"resource", r->name}}, static_cast<double>(cache_->Count(r->kind)));
  }
  f.Family("tocsin_controller_relists_total",
           "Lists after the first: 410 Gone, an ERROR event, or an undecodable event.",
           MetricType::Counter);
  for (const auto& [r, s] : stats) f.Add({{"resource", r->name}}, static_cast<double>(s.relists));
  f.Family("tocsin_controller_watch_resumes_total",
           "Watches resumed from the last seen resourceVersion after a dropped stream.",
           MetricType::Counter);
  for (const auto& [r, s] : stats) f.Add({{"resource", r->name}}, static_cast<double>(s.resumes));
  f.Family("tocsin_controller_watch_events_total", "Watch events applied to the cache.",
           MetricType::Counter);
  for (const auto& [r, s] : stats) f.Add({{"resource", r->name}}, static_cast<double>(s.events));
  f.Family("tocsin_controller_watch_bad_events_total",
           "Watch events that could not be decoded (the resource is listed again).",
           MetricType::Counter);
  for (const auto& [r, s] : stats) {
    f.Add({{"resource", r->name}}, static_cast<double>(s.bad_events));
  }
  f.Family("tocsin_controller_synced",
           "1 when every informer the checks read (nodes, pods, daemonsets) has listed once.",
           MetricType::Gauge)
      .Add({}, synced ? 1 : 0);
  f.Family("tocsin_controller_leader",
           "1 on the replica that holds the Lease (always 1 without --leader-elect).",
           MetricType::Gauge)
      .Add({}, leader_() ? 1 : 0);
  if (p.evaluated) {
    f.Family("tocsin_controller_last_evaluation_timestamp_seconds",
             "Unix time of the last evaluation of the checks.", MetricType::Gauge)
        .Add({}, static_cast<double>(
                     std::chrono::duration_cast<std::chrono::seconds>(
                         p.last_evaluation.time_since_epoch())
                         .count()));
  }
  f.Family("tocsin_controller_state_dropped",
           "Findings left out of the Lease annotation at the last write (it was full).",
           MetricType::Gauge)
      .Add({}, static_cast<double>(p.state_dropped));
  // The checks: unknown until evaluated on a synced cache with every watch up, and again when
  // evaluations stopped (a stuck loop must not keep the last verdict forever).
  bool fresh = p.evaluated && Clock::now() - p.last_evaluation <= 2 * resync_ + std::chrono::minutes(1);
  bool known = fresh && synced && watching;
  std::map<std::string, int> failing;
  for (const auto& finding : p.findings) {
    if (finding.severity >= Severity::kWarning) failing[finding.check] = 1;
  }
  f.Family("tocsin_check_status",
           "1 ok, 0 failing (a finding at warning or above), -1 unknown (an informer not synced "
           "or a watch down).",
           MetricType::Gauge);
  std::set<std::string> unknown(p.unknown.begin(), p.unknown.end());
  for (const std::string& id : check_ids_) {
    f.Add({{"check", id}}, !known || unknown.count(id) ? -1 : failing.count(id) ? 0 : 1);
  }
  f.Family("tocsin_finding", "1 for every active finding.", MetricType::Gauge);
  std::set<std::tuple<std::string, std::string, std::string>> series;  // one per label set
  for (const auto& finding : p.findings) {
    series.insert({finding.check, std::string(SeverityName(finding.severity)), finding.subject});
  }
  for (const auto& [check, severity, subject] : series) {
    f.Add({{"check", check}, {"severity", severity}, {"subject", subject}}, 1);
  }
  f.Family("tocsin_finding_since_timestamp_seconds",
           "Onset of the finding: what the objects show, else when it was first seen.",
           MetricType::Gauge);
  std::map<std::pair<std::string, std::string>, double> since;
  for (const auto& finding : p.findings) {
    if (!finding.since) continue;
    double t = static_cast<double>(
        std::chrono::duration_cast<std::chrono::seconds>(finding.since->time_since_epoch())
            .count());
    auto key = std::make_pair(finding.check, finding.subject);
    auto it = since.find(key);
    if (it == since.end() || t < it->second) since[key] = t;
  }
  for (const auto& [key, t] : since) f.Add({{"check", key.first}, {"subject", key.second}}, t);
  return f.Take();
}

}  // namespace tocsin::controller
