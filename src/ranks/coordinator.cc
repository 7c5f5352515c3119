#include "ranks/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/strings.h"
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

// accept(2) errors that mean "out of a resource": waiting helps, retrying at once spins.
bool ResourceError(int e) {
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

}  // namespace

Coordinator::Coordinator(WorldOptions options, Fd listener)
    : options_(std::move(options)), listener_(std::move(listener)), secret_(NewRunSecret()) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    stop_read_ = Fd(fds[0]);
    stop_write_ = Fd(fds[1]);
  }
  fcntl(listener_.get(), F_SETFL, fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
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

void Coordinator::Refuse(Pending& p, const std::string& why, const std::string& answer) {
  (void)WriteFrame(p.fd.get(), json{{"type", "refused"}, {"reason", "refused: " + answer}}.dump(),
                   DeadlineIn(std::chrono::milliseconds(500)), "a joining rank");
  p.fd = Fd();
  if (refused_.size() < kMaxRefusalsKept) refused_.push_back(why);
  ++refused_count_;
}

bool Coordinator::BeforeRoster(int rank) {
  Client& c = clients_[rank];
  Status st = c.reader.ReadFrom(c.fd.get(), c.peer.Name());
  if (st.code() == StatusCode::kParseError) {
    Malformed(rank, st);
    return false;
  }
  if (!st.ok()) {
    c.left = true;
    AbortAll(c.peer.Name() + " went away before all ranks joined", rank);
    return false;
  }
  if (!c.reader.Complete()) return true;
  auto m = DecodeMessage(c.reader.Take(), options_.world_size);
  if (m.ok() && m->type == Message::Type::kAddress && !c.addressed) {
    c.peer.address = m->payload;
    c.addressed = true;
    return true;
  }
  if (m.ok() && m->type == Message::Type::kAbort) {
    c.left = true;
    AbortAll(c.peer.Name() + " failed: " + (m->text.empty() ? "no reason given" : m->text), rank);
    return false;
  }
  Malformed(rank, m.ok() ? Status::ParseError("a message before the roster") : m.status());
  return false;
}

bool Coordinator::Consider(Pending& p, const std::string& frame) {
  std::string from = "a connection from " + (p.ip.empty() ? std::string("?") : p.ip);
  auto hello = DecodeHello(frame);
  if (!hello.ok()) {
    Refuse(p, from + " is not a tocsin rank (" + hello.status().message() + ")",
           "not a tocsin rank");
    return false;
  }
  const Hello& h = *hello;
  // Before the token matched, the peer is told nothing about this job, not even the version.
  if (!ConstantTimeEquals(options_.token, h.token)) {
    Refuse(p, from + " (as rank " + std::to_string(h.rank) + ") has another token",
           "not authenticated: another token (set the same TOCSIN_BENCH_TOKEN or --token-file "
           "on every rank)");
    return false;
  }
  Peer peer{h.rank, h.host, p.ip, h.address, h.node, h.node_dropped};
  std::string who = "rank " + std::to_string(h.rank) + " (" + Quote(h.host, 64) + " " + p.ip + ")";
  std::string why;
  if (h.version != kVersion) {
    why = who + " runs tocsin " + Quote(h.version, 64) + ", rank 0 runs " + kVersion;
  } else if (h.world_size != options_.world_size) {
    why = who + " has world size " + std::to_string(h.world_size) + ", rank 0 has " +
          std::to_string(options_.world_size);
  } else if (h.rank < 0 || h.rank >= options_.world_size) {
    why = who + " is out of range for world size " + std::to_string(options_.world_size);
  } else if (clients_[h.rank].joined) {
    why = who + " joined twice (two ranks with the same --rank?)";
  } else if (h.params != options_.params) {
    why = who + " has other benchmark parameters than rank 0: " + Quote(h.params, 200);
  }
  if (!why.empty()) {
    Refuse(p, why, why);
    return false;
  }
  Client& c = clients_[h.rank];
  c.fd = std::move(p.fd);
  c.peer = peer;
  c.joined = true;
  return true;
}

void Coordinator::AcceptSome(std::vector<Pending>& pending) {
  for (int i = 0; i < 16; ++i) {  // a burst, then the others get their turn
    int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      int e = errno;
      if (e == EINTR || e == ECONNABORTED) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      accept_error_ = std::string("accepting a connection failed: ") + strerror(e) +
                      (e == EMFILE || e == ENFILE ? " (raise the open-file limit)" : "");
      // Pause accepting rather than spin: the connection stays queued and is retried. The
      // oldest waiting connection gives its descriptor back.
      accept_backoff_ = std::min(std::max(accept_backoff_ * 2, std::chrono::milliseconds(10)),
                                 std::chrono::milliseconds(1000));
      accept_paused_until_ = DeadlineIn(accept_backoff_);
      if (ResourceError(e) && !pending.empty()) {
        pending.erase(pending.begin());
        ++evicted_;
      }
      return;
    }
    accept_backoff_ = std::chrono::milliseconds(0);
    Fd conn(fd);
    TuneStream(conn.get());
    if (pending.size() >= kMaxPending) {  // the oldest has had the longest to say hello
      pending.erase(pending.begin());
      ++evicted_;
    }
    std::string ip = PeerAddress(conn.get());
    pending.push_back({std::move(conn), ip, DeadlineIn(options_.hello_timeout)});
  }
}

std::string Coordinator::AdmissionTrouble() const {
  std::string out;
  for (const auto& why : refused_) out += "; refused: " + why;
  if (refused_count_ > refused_.size()) {
    out += "; " + std::to_string(refused_count_ - refused_.size()) + " more refused";
  }
  if (silent_dropped_ > 0) {
    out += "; " + std::to_string(silent_dropped_) + " connection(s) sent no hello within " +
           Seconds(options_.hello_timeout) + " and were dropped";
  }
  if (evicted_ > 0) {
    out += "; " + std::to_string(evicted_) + " waiting connection(s) were dropped to make room";
  }
  if (!accept_error_.empty()) out += "; " + accept_error_;
  return out;
}

// Admits ranks until all joined (true) or the timeout ran out (false, ranks told).
bool Coordinator::Admit() {
  Deadline deadline = DeadlineIn(options_.timeout);
  std::vector<Pending> pending;
  auto all_in = [this] {
    for (const auto& c : clients_) {
      if (!c.joined || !c.addressed) return false;
    }
    return true;
  };
  while (!all_in()) {
    Deadline now = SteadyClock::now();
    if (accept_paused_until_ && now >= *accept_paused_until_) accept_paused_until_.reset();
    std::vector<pollfd> fds = {{accept_paused_until_ ? -1 : listener_.get(), POLLIN, 0},
                               {stop_read_.get(), POLLIN, 0}};
    Deadline wake = deadline;
    for (auto& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.expires);
    }
    if (accept_paused_until_) wake = std::min(wake, *accept_paused_until_);
    for (auto& c : clients_) {
      if (c.joined) fds.push_back({c.fd.get(), POLLIN, 0});  // a joined rank that goes away
    }
    int r = poll(fds.data(), fds.size(), MillisLeft(wake));
    if (r < 0 && errno != EINTR) {
      AbortAll(std::string("rank 0 cannot wait for ranks: poll: ") + strerror(errno));
      return false;
    }
    now = SteadyClock::now();
    if (now >= deadline) {
      std::vector<int> missing, silent;
      for (int i = 0; i < options_.world_size; ++i) {
        if (!clients_[i].joined) missing.push_back(i);
        if (clients_[i].joined && !clients_[i].addressed) silent.push_back(i);
      }
      AbortAll(missing.empty()
                   ? "rank(s) " + RankList(silent) + " joined but did not set up the data plane " +
                         "within " + Seconds(options_.timeout)
                   : "rank(s) " + RankList(missing) + " did not join coordinator " +
                         options_.coordinator + " within " + Seconds(options_.timeout) +
                         AdmissionTrouble());
      return false;
    }
    if (r <= 0) {
      for (auto& p : pending) {
        if (now >= p.expires) {
          p.fd = Fd();
          ++silent_dropped_;
        }
      }
      std::erase_if(pending, [](const Pending& p) { return !p.fd.valid(); });
      continue;
    }
    if (Stopped()) return false;
    size_t polled = pending.size();
    for (size_t i = 0; i < polled; ++i) {
      Pending& p = pending[i];
      if (!(fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (now >= p.expires) {
          p.fd = Fd();
          ++silent_dropped_;
        }
        continue;
      }
      Status st = p.reader.ReadFrom(p.fd.get(), "a joining connection");
      if (!st.ok()) {
        if (st.code() == StatusCode::kParseError) {  // an oversized frame before any token
          Refuse(p, "a connection from " + p.ip + " sent " + st.message(), "not a tocsin rank");
        }
        p.fd = Fd();  // gone, or not a tocsin peer
        continue;
      }
      if (p.reader.Complete()) Consider(p, p.reader.Take());
    }
    std::erase_if(pending, [](const Pending& p) { return !p.fd.valid(); });
    if (fds[0].revents & POLLIN) AcceptSome(pending);
    for (int i = 0; i < options_.world_size; ++i) {
      if (!clients_[i].joined) continue;
      pollfd p{clients_[i].fd.get(), POLLIN, 0};
      if (poll(&p, 1, 0) > 0 && !BeforeRoster(i)) return false;
    }
  }
  std::vector<Peer> peers;
  for (const auto& c : clients_) peers.push_back(c.peer);
  Broadcast(EncodeRoster(peers, secret_));
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
      Status st = c.reader.ReadFrom(c.fd.get(), c.peer.Name());
      if (st.code() == StatusCode::kParseError) return Malformed(ranks[k], st);
      if (!st.ok()) {
        c.left = true;
        AbortAll(c.peer.Name() + " went away (its control connection closed: killed or crashed)",
                 ranks[k]);
        return;
      }
      if (!c.reader.Complete()) continue;  // the rest of the frame is on its way
      auto m = DecodeMessage(c.reader.Take(), options_.world_size);
      if (!m.ok()) return Malformed(ranks[k], m.status());
      if (m->type == Message::Type::kBye) {
        c.left = true;
        if (!deadline) deadline = DeadlineIn(options_.timeout);
      } else if (m->type == Message::Type::kAbort) {
        c.left = true;
        AbortAll(c.peer.Name() + " failed: " + (m->text.empty() ? "no reason given" : m->text),
                 ranks[k]);
        return;
      } else if (m->type == Message::Type::kStall) {
        c.stalled_on = m->peer;
        c.stall_detail = m->text;
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
      } else if (m->type == Message::Type::kGather) {
        if (c.has_payload) {
          return Malformed(ranks[k], Status::ParseError("two results for one step"));
        }
        c.payload = std::move(m->payload);
        c.has_payload = true;
        if (!deadline) deadline = DeadlineIn(options_.timeout);
      }
    }
    bool all = true;
    for (const auto& c : clients_) all &= c.has_payload;
    if (all) {
      json out = {{"type", "gathered"}, {"round", ++round}, {"payloads", json::array()}};
      for (auto& c : clients_) {
        out["payloads"].push_back(std::move(c.payload));
        c.has_payload = false;
      }
      std::string frame = out.dump();
      if (frame.size() > kMaxFrameBytes) {  // the ranks could not read it
        AbortAll("the results of step " + std::to_string(round) + " (" +
                 std::to_string(frame.size() >> 20) + " MiB from all ranks) exceed " +
                 std::to_string(kMaxFrameBytes >> 20) + " MiB");
        return;
      }
      Broadcast(frame);
      deadline.reset();
    }
  }
}

void Coordinator::Malformed(int rank, const Status& why) {
  Client& c = clients_[rank];
  c.left = true;
  AbortAll(c.peer.Name() + " sent a malformed message (" + why.message() + ")", rank);
}

}  // namespace tocsin::ranks
