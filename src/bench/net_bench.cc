#include "bench/net_bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "bench/collectives.h"
#include "bench/harness.h"
#include "bench/payloads.h"
#include "bench/results.h"
#include "bench/transport.h"
#include "bench/catalog.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;


// Test hook: TOCSIN_TEST_FAULT="kill:RANK:OP" or "hang:RANK:OP" makes that rank SIGKILL or
// SIGSTOP itself at its OP-th data operation, so tests fail a rank mid-run without timing games.
void MaybeFault(int rank) {
  static const std::string spec = [] {
    const char* v = std::getenv("TOCSIN_TEST_FAULT");
    return std::string(v ? v : "");
  }();
  static int ops = 0;
  if (spec.empty()) return;
  ++ops;
  auto parts = Split(spec, ':');
  if (parts.size() != 3 || ParseInt64(parts[1]) != rank || ParseInt64(parts[2]) != ops) return;
  raise(parts[0] == "hang" ? SIGSTOP : SIGKILL);
}

double Micros(SteadyClock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// This process's CPU time so far (user + sys, every thread), in microseconds.
double CpuMicros() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return t.tv_sec * 1e6 + t.tv_usec; };
  return us(u.ru_utime) + us(u.ru_stime);
}

// The benchmark's buffers, registered with the transport once (every transfer uses them).
struct Buffers {
  std::vector<float> send, recv, tmp;
};

class Run {
 public:
  Run(const NetBenchOptions& o, ranks::World& w, Transport& t) : o_(o), world_(w), t_(t) {}

  Deadline OpDeadline() const { return ranks::DeadlineIn(o_.world.timeout); }

  Status Allocate(size_t max_bytes, int n) {
    size_t count = max_bytes / sizeof(float) + n;
    b_.send.assign(count, 0);
    b_.recv.assign(count, 0);
    b_.tmp.assign(count / n + 2, 0);
    for (auto* v : {&b_.send, &b_.recv, &b_.tmp}) {
      Status st = t_.RegisterBuffer(v->data(), v->size() * sizeof(float));
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  // One collective over the sweep; rank 0 gets rows averaged over ranks.
  Result<TestResult> Collective(const bench::Collective& c, const std::vector<size_t>& sizes) {
    int n = world_.size(), r = world_.rank();
    std::vector<SizeResult> mine;
    for (size_t bytes : sizes) {
      size_t count = c.Count(bytes, n);
      if (count == 0) continue;
      c.Init(b_.send.data(), count, r, n);
      int64_t wrong = -1;
      if (o_.check) {
        std::fill(b_.recv.begin(), b_.recv.begin() + c.RecvCount(count, n), -1.0f);
        Status st =
            c.Run(t_, b_.send.data(), b_.recv.data(), b_.tmp.data(), count, r, n, OpDeadline());
        if (!st.ok()) return st;
        wrong = static_cast<int64_t>(c.Wrong(b_.recv.data(), count, r, n));
      }
      for (int i = 0; i < o_.warmup; ++i) {
        Status st =
            c.Run(t_, b_.send.data(), b_.recv.data(), b_.tmp.data(), count, r, n, OpDeadline());
        if (!st.ok()) return st;
      }
      if (Status st = world_.Barrier(); !st.ok()) return st;
      double cpu_start = CpuMicros();
      auto start = SteadyClock::now();
      for (int i = 0; i < o_.iters; ++i) {
        MaybeFault(r);
        Status st =
            c.Run(t_, b_.send.data(), b_.recv.data(), b_.tmp.data(), count, r, n, OpDeadline());
        if (!st.ok()) return st;
      }
      double us = Micros(SteadyClock::now() - start) / o_.iters;
      double cpu_us = (CpuMicros() - cpu_start) / o_.iters;
      mine.push_back({count * sizeof(float), count, us, wrong, cpu_us});
      Progress(c.name() + " (float32 " + c.redop() + ")", c.redop(), c.BusBwFactor(n),
               mine.back());
    }
    TOCSIN_ASSIGN_OR_RETURN(auto all, world_.AllGather(MaybeCorrupt(r, EncodeSizeResults(mine))));
    TestResult out{c.name(), c.redop(), c.BusBwFactor(n), {}};
    if (c.name() == "allreduce") {
      out.slice_bytes = o_.ring.slice_bytes;
      out.rings = o_.ring.RingsFor(n);
    }
    std::vector<std::vector<SizeResult>> per_rank;
    for (size_t k = 0; k < all.size(); ++k) {
      auto rows = DecodeSizeResults(all[k], mine);
      if (!rows.ok()) return Malformed(static_cast<int>(k), rows.status());
      per_rank.push_back(std::move(*rows));
    }
    for (size_t i = 0; i < mine.size(); ++i) {
      SweepRow row;
      row.bytes = mine[i].bytes;
      row.count = mine[i].count;
      double sum = 0;
      for (const auto& pr : per_rank) {
        sum += pr[i].us;
        row.cpu_us += pr[i].cpu_us;
        if (pr[i].wrong >= 0) row.wrong = std::max<int64_t>(row.wrong, 0) + pr[i].wrong;
      }
      row.time_us = sum / per_rank.size();
      row.algbw = row.time_us > 0 ? row.bytes / row.time_us / 1e3 : 0;
      row.busbw = row.algbw * out.factor;
      out.rows.push_back(row);
    }
    return out;
  }

  // After a failure: the rank whose results were malformed (-1: none).
  int malformed_rank() const { return malformed_rank_; }

  // Streams `iters` messages of `bytes` from `from` to `to` (the others wait); the sender times
  // from the receiver's "ready" to its final acknowledgement.
  Result<double> Stream(int from, int to, size_t bytes, int64_t& wrong) {
    int me = world_.rank();
    MaybeFault(me);
    // Small messages use registered memory too (RDMA providers with FI_MR_LOCAL need it).
    char* token = reinterpret_cast<char*>(b_.tmp.data());
    char* buf = reinterpret_cast<char*>(b_.send.data());
    char* rbuf = reinterpret_cast<char*>(b_.recv.data());
    if (me == from) {
      for (size_t i = 0; i < bytes / sizeof(float); ++i) b_.send[i] = InputValue(from, i);
      for (int i = 0; i < o_.warmup; ++i) {
        if (Status st = t_.SendRecv(to, buf, bytes, -1, nullptr, 0, OpDeadline()); !st.ok())
          return st;
      }
      if (Status st = t_.SendRecv(-1, nullptr, 0, to, token, 1, OpDeadline()); !st.ok()) return st;
      auto start = SteadyClock::now();
      for (int i = 0; i < o_.iters; ++i) {
        if (Status st = t_.SendRecv(to, buf, bytes, -1, nullptr, 0, OpDeadline()); !st.ok())
          return st;
      }
      if (Status st = t_.SendRecv(-1, nullptr, 0, to, token, 1, OpDeadline()); !st.ok()) return st;
      return Micros(SteadyClock::now() - start) / o_.iters;
    }
    for (int i = 0; i < o_.warmup; ++i) {
      if (Status st = t_.SendRecv(-1, nullptr, 0, from, rbuf, bytes, OpDeadline()); !st.ok())
        return st;
    }
    if (Status st = t_.SendRecv(from, token, 1, -1, nullptr, 0, OpDeadline()); !st.ok()) return st;
    for (int i = 0; i < o_.iters; ++i) {
      if (Status st = t_.SendRecv(-1, nullptr, 0, from, rbuf, bytes, OpDeadline()); !st.ok())
        return st;
    }
    if (Status st = t_.SendRecv(from, token, 1, -1, nullptr, 0, OpDeadline()); !st.ok()) return st;
    if (o_.check) {
      int64_t bad = 0;
      for (size_t i = 0; i < bytes / sizeof(float); ++i) bad += b_.recv[i] != InputValue(from, i);
      wrong = std::max<int64_t>(wrong, 0) + bad;
    }
    return 0.0;
  }

  // Half the round trip of 8-byte messages between a and b.
  Result<double> Latency(int a, int b) {
    int me = world_.rank(), peer = me == a ? b : a;
    char* msg = reinterpret_cast<char*>(b_.tmp.data());  // registered memory
    int rounds = 10 + std::max(o_.iters, 10);
    auto start = SteadyClock::now();
    for (int i = 0; i < rounds; ++i) {
      if (i == 10) start = SteadyClock::now();
      Status st = me == a ? t_.SendRecv(peer, msg, 8, -1, nullptr, 0, OpDeadline())
                          : t_.SendRecv(-1, nullptr, 0, peer, msg, 8, OpDeadline());
      if (st.ok()) {
        st = me == a ? t_.SendRecv(-1, nullptr, 0, peer, msg, 8, OpDeadline())
                     : t_.SendRecv(peer, msg, 8, -1, nullptr, 0, OpDeadline());
      }
      if (!st.ok()) return st;
    }
    return Micros(SteadyClock::now() - start) / (rounds - 10) / 2;
  }

  // Every pair alone, both directions, every size; rank 0 gets the sweep rows and pairs.
  Status P2p(const std::vector<size_t>& sizes, TestResult& result, std::vector<PairResult>& pairs) {
    int n = world_.size(), me = world_.rank();
    std::vector<P2pRecord> mine;  // measured here: latencies, directions sent, wrong counts
    int64_t wrong = o_.check ? 0 : -1;
    std::vector<size_t> used;
    for (size_t bytes : sizes) {
      if (bytes / sizeof(float) > 0) used.push_back(bytes / sizeof(float) * sizeof(float));
    }
    using Kind = P2pRecord::Kind;
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (Status st = world_.Barrier(); !st.ok()) return st;
        if (me != a && me != b) continue;
        TOCSIN_ASSIGN_OR_RETURN(double lat, Latency(a, b));
        if (me == a) mine.push_back({Kind::kLatency, a, b, -1, 0, lat, -1});
        for (size_t bytes : used) {
          for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            TOCSIN_ASSIGN_OR_RETURN(double us, Stream(from, to, bytes, wrong));
            if (me == from) {
              mine.push_back({Kind::kStream, a, b, from, bytes, us, -1});
              Progress(fmt::format("p2p rank {} -> rank {}", from, to), "none", 1.0,
                       {bytes, bytes / sizeof(float), us, -1});
            }
          }
        }
      }
    }
    mine.push_back({Kind::kWrong, -1, -1, -1, 0, 0, wrong});
    TOCSIN_ASSIGN_OR_RETURN(auto all, world_.AllGather(MaybeCorrupt(me, EncodeP2p(mine))));
    result = {"p2p", "none", 1.0, {}};
    std::map<std::pair<int, int>, PairResult> by_pair;
    std::map<size_t, std::vector<double>> times;
    int64_t wrong_total = -1;
    for (size_t k = 0; k < all.size(); ++k) {
      auto records = DecodeP2p(all[k], static_cast<int>(k), n, used);
      if (!records.ok()) return Malformed(static_cast<int>(k), records.status());
      for (const auto& m : *records) {
        if (m.kind == Kind::kWrong) {
          if (m.wrong >= 0) wrong_total = std::max<int64_t>(wrong_total, 0) + m.wrong;
          continue;
        }
        auto& p = by_pair[{m.a, m.b}];
        p.a = m.a;
        p.b = m.b;
        if (m.kind == Kind::kLatency) {
          p.latency_us = m.us;
          continue;
        }
        PairDirection d{m.from, m.from == p.a ? p.b : p.a, m.bytes, m.us};
        times[d.bytes].push_back(d.time_us);
        if (d.bytes == used.back()) (d.from == p.a ? p.ab_gbps : p.ba_gbps) = d.gbps();
      }
    }
    for (size_t bytes : used) {
      SweepRow row;
      row.bytes = bytes;
      row.count = bytes / sizeof(float);
      double sum = 0;
      for (double t : times[bytes]) sum += t;
      row.time_us = times[bytes].empty() ? 0 : sum / times[bytes].size();
      row.algbw = row.busbw = row.time_us > 0 ? bytes / row.time_us / 1e3 : 0;
      row.wrong = bytes == used.back() ? wrong_total : (o_.check ? 0 : -1);
      result.rows.push_back(row);
    }
    for (auto& [k, p] : by_pair) pairs.push_back(p);
    return Status::Ok();
  }

 private:
  // Rank 0's row of one size, printed as it finishes (the report averages over ranks later);
  // a header before the first row of each `what`.
  void Progress(const std::string& what, const std::string& redop, double factor,
                const SizeResult& r) {
    if (!o_.on_progress || world_.rank() != 0) return;
    if (what != progress_of_) {
      progress_of_ = what;
      o_.on_progress("# " + what + ": each size as rank 0 measured it\n" +
                     ProgressLine(SweepColumns(), true));
    }
    SweepRow row{r.bytes, r.count, r.us, 0, 0, r.wrong};
    row.algbw = r.us > 0 ? r.bytes / r.us / 1e3 : 0;
    row.busbw = row.algbw * factor;
    o_.on_progress(ProgressLine(SweepCells(redop, row)));
  }

  // Another rank's results do not decode: that rank is to blame (every rank finds the same).
  Status Malformed(int rank, const Status& why) {
    malformed_rank_ = rank;
    return why;
  }

  int malformed_rank_ = -1;
  std::string progress_of_;  // what the last progress row was of
  const NetBenchOptions& o_;
  ranks::World& world_;
  Transport& t_;
  Buffers b_;
};

std::string ParamsText(const NetBenchOptions& o) {
  json p = {
      {"tests", o.tests},      {"b", o.min_bytes}, {"e", o.max_bytes}, {"f", o.factor},
      {"w", o.warmup},         {"n", o.iters},     {"c", o.check},     {"transport", o.transport},
      {"provider", o.provider}, {"slice", o.ring.slice_bytes}, {"rings", o.ring.rings}};
  return p.dump();
}

// `culprit`: the rank the coordinator blamed ("" when unknown: the job).
Report FailureReport(const std::string& reason, int rank, const std::string& culprit = "") {
  Report report = BenchReport("bench net", "");
  report.findings.push_back(RankFailedFinding(kNetRankFailed, reason, rank, culprit));
  return report;
}

}  // namespace

namespace {

Result<Report> RunAndReport(const NetBenchOptions& o) {
  Report report = BenchReport("bench net", "");
  std::string me = "rank " + std::to_string(o.world.rank);
  auto refuse = [&](const TransportInfo& info) {
    report.host = info.ip.empty() ? ranks::Hostname() : info.ip;
    report.findings.push_back(NotRdmaFinding(info, me));
    report.inventory = {{"transport", TransportJson(info)}};
    return report;
  };
  // --require rdma is decided by each rank alone, before any rendezvous: a refusing rank never
  // depends on the others being up.
  if (o.require_rdma) {
    TransportInfo probe;
    if (o.transport == "tcp") {
      probe.kind = "tcp";
      probe.ip = o.bind_ip;
      probe.interface = InterfaceOf(o.bind_ip);
    } else {
      auto t = CreateFabricTransport(o.provider, o.bind_ip, o.world.rank, -1);
      if (!t.ok()) {
        // No such endpoint here (the provider is not offered, or libfabric is missing): the
        // path cannot be RDMA. A report that says what is offered, not a usage error.
        probe.kind = "fabric";
        probe.provider = o.provider.empty() ? "(any)" : o.provider;
        probe.ip = o.bind_ip;
        probe.interface = InterfaceOf(o.bind_ip);
        Report r = refuse(probe);
        auto offered = OfferedFabricProviders();
        Finding& f = r.findings.back();
        f.message = "--require rdma, but libfabric offers no endpoint" +
                    (o.provider.empty() ? std::string() : " for provider " + o.provider) +
                    " here (" + t.status().message() + "); offered: " +
                    (offered.ok() ? (offered->empty() ? "none" : Join(*offered, ", "))
                                  : offered.status().message());
        f.evidence["error"] = t.status().message();
        f.evidence["offered_providers"] =
            offered.ok() ? nlohmann::json(*offered) : nlohmann::json(nullptr);
        r.inventory["offered_providers"] = f.evidence["offered_providers"];
        return r;
      }
      probe = (*t)->info();
    }
    if (!probe.rdma) return refuse(probe);
  }
  ranks::WorldOptions wo = o.world;
  wo.params = ParamsText(o);  // every rank must run the same benchmark
  auto world = ranks::World::Connect(wo);
  if (!world.ok()) return FailureReport(world.status().message(), o.world.rank);
  ranks::World& w = **world;
  if (w.rank() == 0 && o.on_coordinator) o.on_coordinator(w.options().coordinator);
  std::string ip = o.bind_ip.empty() ? w.local_ip() : o.bind_ip;
  auto transport = o.transport == "tcp"
                       ? CreateTcpTransport(ip, w.rank(), w.control_fd(), o.tcp)
                       : CreateFabricTransport(o.provider, ip, w.rank(), w.control_fd());
  if (!transport.ok()) {
    w.Abort(transport.status().message());
    return transport.status();
  }
  Transport& t = **transport;
  report.host = t.info().ip;
  if (o.require_rdma && !t.info().rdma) {  // the provider chosen on this interface differs
    w.Abort("refused to run: " + t.info().Describe() + " is not RDMA");
    return refuse(t.info());
  }
  // From here on a failure anywhere aborts every rank with a reason that names the rank.
  auto fail = [&](const Status& st) -> Report {
    std::string reason = st.message();
    if (reason == "aborted") {
      reason = w.PollAbort().message();
    } else if (t.failed_peer() >= 0) {
      // Let the coordinator decide who failed: a dead rank's control connection closes, a hung
      // rank is the one others waited on that reports nothing itself.
      reason = w.ReportStall(t.failed_peer(), reason).message();
    } else {
      w.Abort(reason);
    }
    Report r = FailureReport(reason, w.rank(), w.aborted_by());
    r.host = t.info().ip;
    r.inventory["transport"] = TransportJson(t.info());
    return r;
  };
  auto peers = w.Join(t.address());
  if (!peers.ok()) {
    Report r = FailureReport(peers.status().message(), w.rank(), w.aborted_by());
    r.inventory["transport"] = TransportJson(t.info());
    return r;
  }
  if (Status st = t.Connect(*peers, w.run_secret(), ranks::DeadlineIn(o.world.timeout));
      !st.ok()) {
    return fail(st);
  }
  BenchOutcome outcome;
  outcome.transport = t.info();
  outcome.peers = *peers;
  Run run(o, w, t);
  // Every rank decodes every rank's results: all find the same malformed one and blame it.
  auto fail_run = [&](const Status& st) -> Report {
    int bad = run.malformed_rank();
    if (bad < 0) return fail(st);
    std::string reason = (*peers)[bad].Name() + " sent malformed results: " + st.message();
    w.Abort(reason);
    Report r = FailureReport(reason, w.rank(), (*peers)[bad].Name());
    r.host = t.info().ip;
    r.inventory["transport"] = TransportJson(t.info());
    return r;
  };
  std::vector<size_t> sizes = SweepSizes(o.min_bytes, o.max_bytes, o.factor);
  if (Status st = run.Allocate(o.max_bytes, w.size()); !st.ok()) return fail(st);
  for (const auto& name : o.tests) {
    if (name == "p2p") {
      if (w.size() < 2) continue;
      TestResult r;
      if (Status st = run.P2p(sizes, r, outcome.pairs); !st.ok()) return fail_run(st);
      outcome.tests.push_back(r);
      continue;
    }
    auto c = MakeCollective(name, o.ring);
    auto r = run.Collective(*c, sizes);
    if (!r.ok()) return fail_run(r.status());
    outcome.tests.push_back(*r);
  }
  w.Leave();
  FillReport(outcome, o.min_busbw, o.straggler_ratio, report);
  return report;
}

}  // namespace

Result<Report> RunNetBench(const NetBenchOptions& o) {
  TOCSIN_RETURN_IF_ERROR(ValidateNetBench(o));
  auto report = RunAndReport(o);
  if (report.ok()) SortFindings(report->findings);
  return report;
}

}  // namespace tocsin::bench
