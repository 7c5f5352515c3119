#include "ranks/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "tocsin/version.h"

namespace tocsin::ranks {
namespace {

using nlohmann::json;

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  snprintf(buf, sizeof buf, ms.count() % 1000 ? "%.1f s" : "%.0f s", ms.count() / 1000.0);
  return buf;
}

}  // namespace

Coordinator::Coordinator(WorldOptions options, Fd listener)
    : options_(std::move(options)), listener_(std::move(listener)) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    stop_read_ = Fd(fds[0]);
    stop_write_ = Fd(fds[1]);
  }
}

void Coordinator::Stop(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_reason_ = reason;
  }
  char c = 1;
  (void)!write(stop_write_.get(), &c, 1);
}

bool Coordinator::Stopped() {
  pollfd p{stop_read_.get(), POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  AbortAll(stop_reason_);
  return true;
}

void Coordinator::Broadcast(const std::string& frame) {
  for (auto& c : clients_) {
    if (c.fd.valid() && !c.left) {
      (void)WriteFrame(c.fd.get(), frame, DeadlineIn(std::chrono::seconds(2)), c.peer.Name());
    }
  }
}

void Coordinator::AbortAll(const std::string& reason, int culprit) {
  json m = {{"type", "abort"}, {"reason", reason}};
  if (culprit >= 0 && culprit < static_cast<int>(clients_.size())) {
    m["culprit"] = clients_[culprit].peer.Name();
  }
  Broadcast(m.dump());
}

// The ranks that others waited on but that did not report a stall themselves: hung or dead.
std::string Coordinator::StallVerdict(int& culprit) {
  std::vector<int> culprits;
  std::string evidence;
  for (const auto& c : clients_) {
    if (c.stalled_on < 0) continue;
    evidence += "; " + c.peer.Name() + " waited on rank " + std::to_string(c.stalled_on);
    const Client& blamed = clients_[c.stalled_on];
    if (blamed.stalled_on < 0 &&
        std::find(culprits.begin(), culprits.end(), c.stalled_on) == culprits.end()) {
      culprits.push_back(c.stalled_on);
    }
  }
  culprit = culprits.empty() ? -1 : culprits[0];
  std::string who;
  for (int r : culprits) who += (who.empty() ? "" : ", ") + clients_[r].peer.Name();
  if (who.empty()) return "ranks stalled waiting on each other" + evidence;
  return who + " stopped responding (hung or unreachable) within " + Seconds(options_.timeout) +
         evidence;
}

void Coordinator::Run() {
  clients_.resize(options_.world_size);
  if (Admit()) Rounds();
}

// Admits ranks until all joined (true) or the timeout ran out (false, ranks told).
bool Coordinator::Admit() {
  Deadline deadline = DeadlineIn(options_.timeout);
  std::vector<Fd> pending;
  int joined = 0;
  while (joined < options_.world_size) {
    std::vector<pollfd> fds = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    for (auto& p : pending) fds.push_back({p.get(), POLLIN, 0});
    for (auto& c : clients_) {
      if (c.joined) fds.push_back({c.fd.get(), POLLIN, 0});  // a joined rank that goes away
    }
    int r = poll(fds.data(), fds.size(), MillisLeft(deadline));
    if (r == 0) {
      std::vector<int> missing;
      for (int i = 0; i < options_.world_size; ++i) {
        if (!clients_[i].joined) missing.push_back(i);
      }
      std::string reason = "rank(s) " + RankList(missing) + " did not join coordinator " +
                           options_.coordinator + " within " + Seconds(options_.timeout);
      for (const auto& why : refused_) reason += "; refused: " + why;
      AbortAll(reason);
      return false;
    }
    if (r < 0) continue;
    if (Stopped()) return false;
    size_t polled = pending.size();
    if (fds[0].revents & POLLIN) {
      auto fd = Accept(listener_.get(), DeadlineIn(std::chrono::milliseconds(100)));
      if (fd.ok()) {
        TuneStream(fd->get());
        pending.push_back(std::move(*fd));
      }
    }
    for (size_t i = 0; i < polled; ++i) {
      if (!(fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Fd fd = std::move(pending[i]);
      auto frame = ReadFrame(fd.get(), DeadlineIn(std::chrono::seconds(5)), "a joining rank");
      if (!frame.ok()) continue;  // not a tocsin peer, or it went away: drop it
      json h = json::parse(*frame, nullptr, false);
      Peer peer;
      try {  // this thread must not throw on a stranger's frame: it would end the process
        if (h.is_object())
          peer = {h.value("rank", -1), h.value("host", ""), "", h.value("address", "")};
      } catch (const json::exception&) {
        h = json();
      }
      std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.host + ")";
      std::string why;
      if (!h.is_object() || !h["type"].is_string() || h["type"] != "hello" ||
          !h["version"].is_string() || !h["token"].is_string() || !h["world_size"].is_number() ||
          !h["params"].is_string()) {
        why = "a connection that is not a tocsin rank";
      } else if (h.value("version", "") != kVersion) {
        why = who + " runs tocsin " + h.value("version", "?") + ", rank 0 runs " + kVersion;
      } else if (h.value("token", "") != options_.token) {
        why = who + " has another token (--token / TOCSIN_BENCH_TOKEN)";
      } else if (h.value("world_size", -1) != options_.world_size) {
        why = who + " has world size " + std::to_string(h.value("world_size", -1)) +
              ", rank 0 has " + std::to_string(options_.world_size);
      } else if (peer.rank < 0 || peer.rank >= options_.world_size) {
        why = who + " is out of range for world size " + std::to_string(options_.world_size);
      } else if (clients_[peer.rank].joined) {
        why = who + " joined twice (two ranks with the same --rank?)";
      } else if (h.value("params", "") != options_.params) {
        why = who + " has other benchmark parameters than rank 0: " + h.value("params", "");
      }
      if (!why.empty()) {
        (void)WriteFrame(fd.get(), json{{"type", "refused"}, {"reason", "refused: " + why}}.dump(),
                         DeadlineIn(std::chrono::seconds(2)), who);
        refused_.push_back(why);
        continue;
      }
      Client& c = clients_[peer.rank];
      c.fd = std::move(fd);
      c.peer = peer;
      c.peer.ip = PeerAddress(c.fd.get());  // where the rank connected from
      c.joined = true;
      ++joined;
    }
    std::erase_if(pending, [](const Fd& f) { return !f.valid(); });
    for (auto& c : clients_) {
      if (!c.joined) continue;
      pollfd p{c.fd.get(), POLLIN, 0};
      if (poll(&p, 1, 0) > 0) {  // nothing is expected before the roster: it left
        std::string reason = c.peer.Name() + " went away before all ranks joined";
        c.left = true;
        AbortAll(reason);
        return false;
      }
    }
  }
  json roster = {{"type", "roster"}, {"peers", json::array()}};
  for (const auto& c : clients_) {
    roster["peers"].push_back({{"rank", c.peer.rank},
                               {"host", c.peer.host},
                               {"ip", c.peer.ip},
                               {"address", c.peer.address}});
  }
  Broadcast(roster.dump());
  return true;
}

void Coordinator::Rounds() {
  int round = 0;
  std::optional<Deadline> deadline;        // of the round in progress, or of the last ranks' "bye"
  std::optional<Deadline> stall_deadline;  // the end of the grace after a stall report
  while (true) {
    std::vector<pollfd> fds = {{stop_read_.get(), POLLIN, 0}};
    std::vector<int> ranks = {-1};
    for (int i = 0; i < options_.world_size; ++i) {
      if (!clients_[i].left) {
        fds.push_back({clients_[i].fd.get(), POLLIN, 0});
        ranks.push_back(i);
      }
    }
    if (fds.size() == 1) return;  // everyone said bye
    std::optional<Deadline> next = deadline;
    if (stall_deadline && (!next || *stall_deadline < *next)) next = stall_deadline;
    int r = poll(fds.data(), fds.size(), next ? MillisLeft(*next) : -1);
    if (r == 0 && stall_deadline && SteadyClock::now() >= *stall_deadline) {
      int culprit = -1;
      std::string verdict = StallVerdict(culprit);
      AbortAll(verdict, culprit);
      return;
    }
    // poll's millisecond timeout can end just before the deadline it was computed from: wait
    // out the rest rather than blaming every rank of a round whose deadline has not come (this
    // is how a hung rank was once reported as "ranks 0, 1, 2, 3 did not reach step 2").
    if (r == 0 && (!deadline || SteadyClock::now() < *deadline)) continue;
    if (r == 0) {
      std::vector<int> late;
      bool leaving = false;
      for (int i : ranks) {
        if (i >= 0 && !clients_[i].has_payload) late.push_back(i);
      }
      for (const auto& c : clients_) leaving |= c.left;
      AbortAll(leaving ? "rank(s) " + RankList(late) + " did not finish within " +
                             Seconds(options_.timeout) + " of the others"
                       : "rank(s) " + RankList(late) + " did not reach step " +
                             std::to_string(round + 1) + " within " + Seconds(options_.timeout) +
                             " of the others (hung or slow)");
      return;
    }
    if (r < 0) continue;
    if (Stopped()) return;
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Client& c = clients_[ranks[k]];
      auto frame = ReadFrame(c.fd.get(), DeadlineIn(options_.timeout), c.peer.Name());
      if (!frame.ok()) {
        c.left = true;
        AbortAll(c.peer.Name() + " went away (its control connection closed: killed or crashed)",
                 ranks[k]);
        return;
      }
      json m = json::parse(*frame, nullptr, false);
      std::string type;
      try {
        type = m.is_object() ? m.value("type", "") : "";
        if (type == "stall") (void)m.value("peer", -1), (void)m.value("detail", "");
        if (type == "gather") (void)m.value("payload", "");
        if (type == "abort") (void)m.value("reason", "");
      } catch (const json::exception&) {
        type = "";  // a malformed frame from a rank: ignored
      }
      if (type == "bye") {
        c.left = true;
        if (!deadline) deadline = DeadlineIn(options_.timeout);
      } else if (type == "abort") {
        c.left = true;
        AbortAll(c.peer.Name() + " failed: " + m.value("reason", "no reason given"), ranks[k]);
        return;
      } else if (type == "stall") {
        c.stalled_on = m.value("peer", -1);
        c.stall_detail = m.value("detail", "");
        // Live ranks time out within about the same moment; a short grace gathers their reports.
        Deadline grace =
            DeadlineIn(std::min(options_.timeout / 2, std::chrono::milliseconds(2000)));
        stall_deadline = stall_deadline ? std::min(*stall_deadline, grace) : grace;
        bool everyone = true;
        for (const auto& o : clients_) everyone &= o.left || o.stalled_on >= 0;
        if (everyone) {
          int culprit = -1;
          std::string verdict = StallVerdict(culprit);
          AbortAll(verdict, culprit);
          return;
        }
      } else if (type == "gather") {
        c.payload = m.value("payload", "");
        c.has_payload = true;
        if (!deadline) deadline = DeadlineIn(options_.timeout);
      }
    }
    bool all = true;
    for (const auto& c : clients_) all &= c.has_payload;
    if (all) {
      json out = {{"type", "gathered"}, {"round", ++round}, {"payloads", json::array()}};
      for (auto& c : clients_) {
        out["payloads"].push_back(c.payload);
        c.has_payload = false;
      }
      Broadcast(out.dump());
      deadline.reset();
    }
  }
}

}  // namespace tocsin::ranks
