#include "ranks/world.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "ranks/coordinator.h"
#include "sys/env.h"
#include "tocsin/version.h"

namespace tocsin::ranks {
namespace {

using nlohmann::json;

Status EnvInt(const std::map<std::string, std::string>& env, const char* name, int& out) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return Status::Ok();
  auto v = ParseInt64(it->second);
  if (!v || *v < 0 || *v > 1000000) {
    return Status::InvalidArgument(std::string(name) + "=" + it->second + " is not a count");
  }
  out = static_cast<int>(*v);
  return Status::Ok();
}

}  // namespace

std::string Hostname() { return HostName(*NewRootedEnv()); }

std::string NodeName() {
  const char* v = std::getenv("TOCSIN_NODE_NAME");
  return v ? v : "";
}

std::map<std::string, std::string> RankEnvironment() {
  std::map<std::string, std::string> env;
  for (const char* k : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "JOB_COMPLETION_INDEX",
                        "TOCSIN_BENCH_TOKEN"}) {
    if (const char* v = std::getenv(k)) env[k] = v;
  }
  return env;
}

Status ApplyEnvironment(WorldOptions& o, const std::map<std::string, std::string>& env) {
  if (o.rank < 0) {
    if (Status st = EnvInt(env, "RANK", o.rank); !st.ok()) return st;
  }
  if (o.rank < 0) {
    if (Status st = EnvInt(env, "JOB_COMPLETION_INDEX", o.rank); !st.ok()) return st;
  }
  if (o.world_size < 0) {
    if (Status st = EnvInt(env, "WORLD_SIZE", o.world_size); !st.ok()) return st;
  }
  if (o.coordinator.empty()) {
    auto addr = env.find("MASTER_ADDR");
    auto port = env.find("MASTER_PORT");
    if (addr != env.end() && !addr->second.empty()) {
      bool v6 = addr->second.find(':') != std::string::npos;
      o.coordinator = (v6 ? "[" + addr->second + "]" : addr->second) + ":" +
                      (port != env.end() && !port->second.empty() ? port->second : "29500");
    }
  }
  if (o.token.empty()) {
    auto t = env.find("TOCSIN_BENCH_TOKEN");
    if (t != env.end()) o.token = t->second;
  }
  return Status::Ok();
}

Status Validate(const WorldOptions& o) {
  if (o.world_size < 1) {
    return Status::InvalidArgument("world size unknown: pass --world-size or set WORLD_SIZE");
  }
  if (o.rank < 0) {
    return Status::InvalidArgument(
        "rank unknown: pass --rank or set RANK (or JOB_COMPLETION_INDEX in an Indexed Job)");
  }
  if (o.rank >= o.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(o.rank) + " is not below world size " +
                                   std::to_string(o.world_size));
  }
  if (o.world_size > kMaxWorldSize) {
    return Status::InvalidArgument("world size " + std::to_string(o.world_size) +
                                   " is above " + std::to_string(kMaxWorldSize));
  }
  if (o.world_size > 1 && o.token.empty() && !o.insecure_no_token) {
    return Status::InvalidArgument(
        "no token: with more than one rank, anyone who reaches the coordinator could join. Give "
        "every rank the same secret in TOCSIN_BENCH_TOKEN (e.g. export "
        "TOCSIN_BENCH_TOKEN=$(openssl rand -hex 32)) or in a file named by --token-file, or pass "
        "--insecure-no-token");
  }
  if (o.world_size > 1 && o.coordinator.empty()) {
    return Status::InvalidArgument(
        "no coordinator: pass --coordinator HOST:PORT or set MASTER_ADDR/MASTER_PORT");
  }
  if (o.world_size > 1) {
    auto hp = SplitHostPort(o.coordinator);
    if (!hp.ok()) return hp.status().WithPrefix("--coordinator");
  }
  return Status::Ok();
}

Result<std::unique_ptr<World>> World::Connect(const WorldOptions& options) {
  if (Status st = Validate(options); !st.ok()) return st;
  std::unique_ptr<World> w(new World(options));
  // The parameters as every hello carries them (bytes that are not UTF-8 replaced), so that rank
  // 0 compares like with like.
  w->options_.params = AsSent(w->options_.params);
  w->coordinator_name_ = "coordinator " + options.coordinator;
  auto hp = SplitHostPort(options.coordinator);
  if (!hp.ok()) return hp.status();
  auto [host, port] = *hp;
  Deadline deadline = DeadlineIn(options.timeout);
  if (options.rank == 0) {
    // Rank 0 serves the coordinator on the coordinator's address only (MASTER_ADDR names this
    // host), never on every interface.
    auto listener = Listen(host, port);
    // A name that does not resolve yet (a Kubernetes headless Service publishes the pod's record
    // shortly after it starts) is retried until the rendezvous timeout.
    while (!listener.ok() && listener.status().code() == StatusCode::kInvalidArgument &&
           SteadyClock::now() + std::chrono::milliseconds(200) < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      listener = Listen(host, port);
    }
    if (!listener.ok()) {
      return listener.status().WithPrefix(
          "rank 0 cannot be the coordinator (--coordinator / MASTER_ADDR must name an address of "
          "this host)");
    }
    if (port == 0) {
      port = LocalPort(listener->get());
      w->options_.coordinator = host + ":" + std::to_string(port);
    }
    w->coordinator_ = std::make_unique<Coordinator>(w->options_, std::move(*listener));
    w->coordinator_thread_ = std::thread([c = w->coordinator_.get()] { c->Run(); });
  }
  auto fd = ConnectRetry(host, port, deadline);
  if (!fd.ok()) {
    return Status::Timeout("rank " + std::to_string(options.rank) + ": " + fd.status().message() +
                           " (is rank 0 running?)");
  }
  TuneStream(fd->get());
  w->local_ip_ = LocalAddress(fd->get());
  w->control_ = std::move(*fd);
  // The hello goes at once: the coordinator drops a connection that stays silent.
  Hello hello{kVersion,        options.token, options.rank, options.world_size,
              w->options_.params, Hostname(), "", NodeName()};
  std::string frame = EncodeHello(hello);
  if (frame.size() > kMaxHelloBytes) {
    return Status::InvalidArgument(fmt::format(
        "this rank's hello is {} bytes, more than the {} a rank may send before it is "
        "authenticated: the run's parameters are too long (a --path this long, or with "
        "characters that JSON escapes?)",
        frame.size(), kMaxHelloBytes));
  }
  Status st = WriteFrame(w->control_.get(), frame, DeadlineIn(options.timeout),
                         w->coordinator_name_);
  if (!st.ok()) return st;
  return w;
}

World::World(WorldOptions options) : options_(std::move(options)) {}

World::~World() {
  // Also after this rank left (a refused hello, an abort): rank 0's coordinator thread stops
  // before it is joined, never waiting out its admission.
  Abort("rank " + std::to_string(options_.rank) + " stopped");
  control_ = Fd();
  if (coordinator_thread_.joinable()) coordinator_thread_.join();
}

Result<std::string> World::Expect(const std::string& type) {
  // The coordinator bounds every round itself; this bound only covers a coordinator that hangs.
  Deadline deadline = DeadlineIn(options_.timeout * 2 + std::chrono::seconds(5));
  auto frame = ReadFrame(control_.get(), deadline, coordinator_name_);
  if (!frame.ok()) {
    left_ = true;
    if (frame.status().code() == StatusCode::kIoError) {
      return Status::Unavailable(coordinator_name_ +
                                 " (rank 0) went away: " + frame.status().message());
    }
    return frame.status();
  }
  json j = json::parse(*frame, nullptr, false);
  if (!j.is_object()) return Status::ParseError(coordinator_name_ + ": not a tocsin frame");
  auto text = [&j](const char* key, const char* otherwise) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
  };
  std::string got = text("type", "");
  if (got == "abort" || got == "refused") {
    left_ = true;
    aborted_by_ = text("culprit", "");
    return Status::Unavailable(text("reason", "aborted"));
  }
  if (got != type) {
    return Status::ParseError(coordinator_name_ + ": expected " + type + ", got " + got);
  }
  return *frame;
}

Result<std::vector<Peer>> World::Join(const std::string& data_address) {
  json msg = {{"type", "address"}, {"address", data_address}};
  Status sent =
      WriteFrame(control_.get(), msg.dump(), DeadlineIn(options_.timeout), coordinator_name_);
  // A refused hello was answered (and the connection closed): that answer is the reason.
  TOCSIN_ASSIGN_OR_RETURN(std::string frame, Expect("roster"));
  if (!sent.ok()) return sent;
  auto peers = DecodeRoster(frame, options_.world_size, run_secret_);
  if (!peers.ok()) return peers.status().WithPrefix(coordinator_name_ + ": bad roster");
  return peers;
}

Result<std::vector<std::string>> World::AllGather(const std::string& payload) {
  json msg = {{"type", "gather"}, {"round", ++round_}, {"payload", payload}};
  Status st =
      WriteFrame(control_.get(), msg.dump(), DeadlineIn(options_.timeout), coordinator_name_);
  if (!st.ok()) return st;
  TOCSIN_ASSIGN_OR_RETURN(std::string frame, Expect("gathered"));
  auto all = DecodeGathered(frame, options_.world_size);
  if (!all.ok()) return all.status().WithPrefix(coordinator_name_ + ": bad all-gather");
  return all;
}

Status World::Barrier() { return AllGather("").status(); }

Status World::PollAbort() {
  pollfd p{control_.get(), POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return Status::Ok();
  auto frame = Expect("abort");  // anything readable now is an abort or a closed coordinator
  return frame.ok() ? Status::Unavailable("aborted") : frame.status();
}

Status World::ReportStall(int peer, const std::string& detail) {
  if (left_ || !control_.valid()) return Status::Unavailable(detail);
  json msg = {{"type", "stall"}, {"peer", peer}, {"detail", detail}};
  Status st = WriteFrame(control_.get(), msg.dump(), DeadlineIn(std::chrono::seconds(2)),
                         coordinator_name_);
  if (!st.ok()) return Status::Unavailable(detail);
  auto verdict = Expect("abort");  // the coordinator answers with an abort naming the culprit
  left_ = true;
  return verdict.ok() ? Status::Unavailable(detail) : verdict.status();
}

void World::Abort(const std::string& reason) {
  if (coordinator_) coordinator_->Stop("rank 0 (" + local_ip_ + ") failed: " + reason);
  if (left_ || !control_.valid()) return;
  left_ = true;
  json msg = {{"type", "abort"}, {"reason", reason}};
  (void)WriteFrame(control_.get(), msg.dump(), DeadlineIn(std::chrono::seconds(2)),
                   coordinator_name_);
}

void World::Leave() {
  if (left_ || !control_.valid()) return;
  left_ = true;
  (void)WriteFrame(control_.get(), R"({"type":"bye"})", DeadlineIn(std::chrono::seconds(5)),
                   coordinator_name_);
  if (coordinator_thread_.joinable()) coordinator_thread_.join();
}

}  // namespace tocsin::ranks
