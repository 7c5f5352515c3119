#include "agent/fabric.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>

#include "agent/catalog.h"
#include "agent/families.h"
#include "base/strings.h"
#include "net/netdev.h"
#include "rdma/inventory.h"

namespace tocsin::agent {
namespace {

std::string Rate(double bps) { return fmt::format("{:.1f} MB/s", bps / 1e6); }

}  // namespace

FabricWatch::Verdict FabricWatch::Add(const FabricSample& s) {
  Verdict v;
  std::optional<FabricSample> prev = last_;
  last_ = s;
  if (!prev) return v;
  double dt = std::chrono::duration<double>(s.at - prev->at).count();
  if (dt <= 0) return v;
  if (s.ethernet_bytes >= prev->ethernet_bytes) {
    v.ethernet_bps = (s.ethernet_bytes - prev->ethernet_bytes) / dt;
  }
  if (s.rdma_bytes && prev->rdma_bytes && *s.rdma_bytes >= *prev->rdma_bytes) {
    v.rdma_bps = (*s.rdma_bytes - *prev->rdma_bytes) / dt;
  }
  if (!v.ethernet_bps || !v.rdma_bps) return v;  // unknown interval: keep the state as it was
  bool idle_while_busy =
      s.active_rdma_ports > 0 &&
      *v.rdma_bps<options_.rdma_idle_below_bps&& * v.ethernet_bps> options_.tcp_busy_above_bps;
  if (!idle_while_busy) {
    since_.reset();
    return v;
  }
  if (!since_) since_ = prev->wall;
  if (s.wall - *since_ >= options_.sustain) {
    Finding f;
    f.check = kFabricIdleWhileTcpBusy;
    f.severity = Severity::kError;
    f.subject = "node";
    f.message = "RDMA ports idle (" + Rate(*v.rdma_bps) + ") while Ethernet carries " +
                Rate(*v.ethernet_bps) + " since " + FormatRfc3339(*since_) +
                ": jobs may have fallen back to TCP sockets (NCCL_DEBUG=INFO shows \"Using "
                "network Socket\")";
    f.since = since_;
    f.evidence = {{"rdma_bytes_per_second", *v.rdma_bps},
                  {"ethernet_bytes_per_second", *v.ethernet_bps},
                  {"active_rdma_ports", s.active_rdma_ports},
                  {"rdma_idle_below_bps", options_.rdma_idle_below_bps},
                  {"tcp_busy_above_bps", options_.tcp_busy_above_bps},
                  {"sustain_seconds", options_.sustain.count()}};
    v.finding = f;
  }
  return v;
}

TaskSpec FabricTask(const std::string& root, FabricOptions options) {
  TaskSpec t;
  t.name = "fabric";
  t.checks = {kFabricIdleWhileTcpBusy};
  auto watch = std::make_shared<FabricWatch>(options);
  t.run = [root, watch]() -> Result<TaskOutput> {
    auto env = NewRootedEnv(root);
    rdma::Scan rdma = rdma::ScanDevices(*env);
    net::Scan net = net::ScanNetdevs(*env);
    if (net.error) return net.error->error;
    FabricSample s;
    s.at = std::chrono::steady_clock::now();
    s.wall = env->Now();
    uint64_t rdma_sum = 0;
    bool rdma_known = true;
    for (const auto& d : rdma.devices) {
      for (const auto& p : d.ports) {
        if (!p.active()) continue;
        ++s.active_rdma_ports;
        auto tx = p.xmit_bytes(), rx = p.rcv_bytes();
        if (!tx || !rx) {
          rdma_known = false;
          continue;
        }
        rdma_sum += *tx + *rx;
      }
    }
    if (rdma_known) s.rdma_bytes = rdma_sum;
    Families fam;
    for (const auto& n : net.netdevs) {
      prometheus::ClientMetric::Label dev{"device", n.name};
      if (n.rx_bytes) {
        fam.Family("tocsin_netdev_receive_bytes_total",
                   "Bytes received by the interface (statistics/rx_bytes).",
                   prometheus::MetricType::Counter)
            .Add({dev}, static_cast<double>(*n.rx_bytes));
      }
      if (n.tx_bytes) {
        fam.Family("tocsin_netdev_transmit_bytes_total",
                   "Bytes sent by the interface (statistics/tx_bytes).",
                   prometheus::MetricType::Counter)
            .Add({dev}, static_cast<double>(*n.tx_bytes));
      }
      if (n.is_virtual || !n.is_ethernet()) continue;
      // Physical Ethernet: where NCCL's socket transport goes (RoCE netdevs included: RDMA
      // traffic bypasses their netdev counters, socket traffic does not).
      s.ethernet_bytes += n.rx_bytes.value_or(0) + n.tx_bytes.value_or(0);
    }
    FabricWatch::Verdict v = watch->Add(s);
    TaskOutput out;
    if (v.finding) out.findings.push_back(*v.finding);
    if (v.rdma_bps) {
      fam.Family("tocsin_fabric_rdma_bytes_per_second",
                 "RDMA data rate (rx + tx over active ports) between the last two runs.",
                 prometheus::MetricType::Gauge)
          .Add({}, *v.rdma_bps);
    }
    if (v.ethernet_bps) {
      fam.Family("tocsin_fabric_ethernet_bytes_per_second",
                 "Physical Ethernet rate (rx + tx) between the last two runs.",
                 prometheus::MetricType::Gauge)
          .Add({}, *v.ethernet_bps);
    }
    out.families = fam.Take();
    return out;
  };
  return t;
}

}  // namespace tocsin::agent
