#include "controller/informer.h"

#include <algorithm>

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

void Informer::Start() { thread_ = std::thread([this] { Run(); }); }

void Informer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Informer::SetError(const Status& st) {
  std::lock_guard lock(mu_);
  stats_.watch_up = false;
  stats_.last_error = st.message();
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
    std::lock_guard lock(mu_);
    stats_.watch_up = true;
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
  return st;
}

void Informer::Run() {
  auto wait = options_.backoff;
  while (!stop_) {
    if (relist_) {
      Status st = List();
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
    if (st.ok()) {
      // Ended by the server's timeout, or a relist is due. A server that ends every watch at
      // once, with nothing in it, is not hammered: that is backed off like an error.
      bool empty_and_short = stats().events == events &&
                             std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
      if (empty_and_short && !relist_) {
        Backoff(wait);
      } else {
        wait = options_.backoff;
      }
      continue;
    }
    SetError(st);
    if (opened_ && !relist_) {
      // An established watch that broke: resumed from the last version seen, after a short
      // wait (the backoff starts over: the server was answering).
      wait = options_.backoff;
      std::lock_guard lock(mu_);
      ++stats_.resumes;
    }
    Backoff(wait);
  }
  std::lock_guard lock(mu_);
  stats_.watch_up = false;
}

}  // namespace tocsin::controller
