#include "controller/informer.h"

#include <algorithm>
#include <optional>

#include "controller/log.h"
#include "k8s/watch.h"

namespace tocsin::controller {

Informer::Informer(Resource resource, std::unique_ptr<k8s::ApiClient> client, ObjectCache* cache,
                   InformerOptions options, std::function<void()> on_change)
    : resource_(std::move(resource)),
      client_(std::move(client)),
      cache_(cache),
      options_(options),
      on_change_(std::move(on_change)),
      random_(std::random_device{}()) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  client_->SetAbort(&stop_);  // a list or watch in flight ends within about a second on Stop
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Informer::SetError(const Status& st) {
  bool was_up;
  {
    std::lock_guard lock(mu_);
    was_up = stats_.watch_up;
    stats_.watch_up = false;
    stats_.last_error = st.message();
  }
  // Logged when the watch goes down, and then at most once a minute while it stays down.
  auto now = std::chrono::steady_clock::now();
  if (was_up || !logged_at_ || now - *logged_at_ >= std::chrono::minutes(1)) {
    logged_at_ = now;
    Log(resource_.name + ": " + st.message());
  }
}

void Informer::MarkDown() {
  std::lock_guard lock(mu_);
  stats_.watch_up = false;
}

void Informer::Backoff(std::chrono::milliseconds& wait) {
  // Full jitter in [wait/2, wait], then doubled; slept in slices so that Stop stays prompt.
  std::uniform_int_distribution<int64_t> jitter(wait.count() / 2, wait.count());
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(jitter(random_));
  while (!stop_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  wait = std::min(wait * 2, options_.max_backoff);
}

Status Informer::List() {
  k8s::Snapshot listed;
  std::string version;
  Status st = client_->List(resource_.collection, resource_.kind, listed, &version);
  if (!st.ok()) return st;
  cache_->Replace(resource_.kind, std::move(listed));
  version_ = version;
  relist_ = false;
  {
    std::lock_guard lock(mu_);
    if (stats_.synced) ++stats_.relists;
    stats_.synced = true;
  }
  if (on_change_) on_change_();
  return Status::Ok();
}

Status Informer::WatchOnce() {
  std::uniform_int_distribution<int64_t> spread(options_.watch_min.count(),
                                                2 * options_.watch_min.count() - 1);
  int64_t seconds = std::max<int64_t>(1, spread(random_));
  std::string path = resource_.collection + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                     version_ + "&timeoutSeconds=" + std::to_string(seconds);
  Status decode_error;
  auto on_line = [&](std::string_view line) {
    k8s::WatchEvent ev;
    Status st = k8s::DecodeWatchEvent(line, resource_.kind, "watch " + resource_.name, ev);
    if (!st.ok()) {
      decode_error = st;
      std::lock_guard lock(mu_);
      ++stats_.bad_events;
      return false;
    }
    if (ev.type == k8s::WatchEvent::Type::kError) {
      // 410 (Expired, Gone) is the version being compacted away; any other ERROR also means
      // the stream cannot be trusted: list again either way, as client-go does.
      decode_error = ev.code == 410 ? Status::Ok()
                                    : Status::Unavailable("watch " + resource_.name +
                                                          ": ERROR event " +
                                                          std::to_string(ev.code) + " " +
                                                          ev.reason + ": " + ev.message);
      relist_ = true;
      return false;
    }
    version_ = ev.resource_version;
    if (ev.type != k8s::WatchEvent::Type::kBookmark) {
      cache_->Apply(resource_.kind, ev.type, std::move(ev.object));
      {
        std::lock_guard lock(mu_);
        ++stats_.events;
      }
      if (on_change_) on_change_();
    }
    return true;
  };
  opened_ = false;
  auto on_open = [&] {
    opened_ = true;
    bool was_down;
    {
      std::lock_guard lock(mu_);
      was_down = !stats_.last_error.empty();
      stats_.watch_up = true;
      stats_.last_error.clear();
    }
    if (was_down) Log(resource_.name + ": watching again");
  };
  Status st = client_->Watch(path, std::chrono::seconds(seconds) + options_.watch_slack, on_line,
                             &stop_, on_open);
  if (!decode_error.ok()) {
    relist_ = true;
    return decode_error;
  }
  if (!st.ok() && client_->last_status() == 410) {
    relist_ = true;  // a server that answers the stale version with a status, not an event
    return Status::Ok();
  }
  if (st.code() == StatusCode::kIoError) {
    relist_ = true;  // an event too long to take: its object is missing from the cache
    std::lock_guard lock(mu_);
    ++stats_.bad_events;
  }
  return st;
}

void Informer::Run() {
  auto wait = options_.backoff;
  std::optional<std::chrono::steady_clock::time_point> listed_at;
  while (!stop_) {
    if (relist_) {
      MarkDown();
      // A relist soon after the last list (410 or a bad event right away, again and again)
      // backs off like an error: a broken server is not listed in a loop.
      if (listed_at && std::chrono::steady_clock::now() - *listed_at < options_.relist_spacing) {
        Backoff(wait);
        if (stop_) break;
      }
      Status st = List();
      listed_at = std::chrono::steady_clock::now();
      if (!st.ok() && st.code() == StatusCode::kNotFound && resource_.optional) {
        Log(resource_.name + ": not served any more (its CRD was removed?); looked for again "
            "at each resync");
        std::lock_guard lock(mu_);
        stats_.gone = true;
        stats_.watch_up = false;
        return;
      }
      if (!st.ok()) {
        SetError(st);
        Backoff(wait);
        continue;
      }
    }
    int64_t events = stats().events;
    auto started = std::chrono::steady_clock::now();
    Status st = WatchOnce();
    if (stop_) break;
    auto lasted = std::chrono::steady_clock::now() - started;
    // The backoff starts over only after a watch that was worth something.
    bool productive = stats().events > events || lasted >= options_.relist_spacing;
    if (productive) wait = options_.backoff;
    if (st.ok()) {
      // Ended by the server's timeout, or a relist is due. A server that ends every watch at
      // once, with nothing in it, is not hammered: that is backed off like an error.
      if (!productive && !relist_ && lasted < std::chrono::seconds(1)) {
        MarkDown();
        Backoff(wait);
      }
      continue;
    }
    SetError(st);
    if (opened_ && !relist_) {
      std::lock_guard lock(mu_);
      ++stats_.resumes;  // resumed from the last version seen, after the wait
    }
    Backoff(wait);
  }
  MarkDown();
}

}  // namespace tocsin::controller
