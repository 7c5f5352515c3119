#include "rdma/checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "rdma/catalog.h"

namespace tocsin::rdma {
namespace {

const ReadIssue* FindIssue(const Port& port, std::string_view field) {
  for (const auto& i : port.issues) {
    if (i.field == field) return &i;
  }
  return nullptr;
}

std::string StateText(const std::optional<CodedState>& s) {
  return s ? fmt::format("{}: {}", s->code, s->name) : "unknown";
}

// Why a port is not usable, in the words an operator acts on.
std::string DownReason(const Port& port) {
  int state = port.state->code;
  int phys = port.phys_state->code;
  if (phys == kPhysDisabled) return "the port is administratively disabled";
  if (phys == 2) return "no physical link (Polling): check the cable, transceiver and switch port";
  if (phys == kPhysLinkUp && (state == 2 || state == 3)) {
    if (port.link_layer == "InfiniBand") {
      return "the link is up but no subnet manager has activated the port (is the SM running?)";
    }
    return "the link is up but the port is not active";
  }
  if (phys == 6) return "the link is in error recovery";
  if (state == kPortActive) {
    return fmt::format("the port is active but its physical link is not up ({})",
                       port.phys_state->name);
  }
  return "the port is not active";
}

void CheckPortState(const Device& dev, const Port& port, std::vector<Finding>& out) {
  std::string subject = PortSubject(dev, port);
  if (!port.state || !port.phys_state) {
    const ReadIssue* issue = FindIssue(port, port.state ? "phys_state" : "state");
    if (issue) out.push_back(UnknownFinding(kPortDown, subject, issue->path, issue->error));
    return;
  }
  if (port.state->code == kPortActive && port.phys_state->code == kPhysLinkUp) return;
  Finding f;
  f.check = kPortDown;
  f.severity = port.phys_state->code == kPhysDisabled ? Severity::kWarning : Severity::kError;
  f.subject = subject;
  f.message = fmt::format("state {}, phys_state {}: {}", StateText(port.state),
                          StateText(port.phys_state), DownReason(port));
  f.evidence = {{"state", StateText(port.state)},
                {"phys_state", StateText(port.phys_state)},
                {"link_layer", port.link_layer},
                {"netdevs", dev.netdevs}};
  out.push_back(std::move(f));
}

// The fastest ACTIVE port of each HCA model and link layer: what a healthy port of that model
// trains at on this node.
using PeerRates = std::map<std::string, double>;
std::string PeerKey(const Device& d, const Port& p) { return d.hca_type + "|" + p.link_layer; }

PeerRates BestPeerRates(const Scan& scan) {
  PeerRates best;
  for (const auto& d : scan.devices) {
    for (const auto& p : d.ports) {
      if (p.active() && p.rate) best[PeerKey(d, p)] = std::max(best[PeerKey(d, p)], p.rate->gbps);
    }
  }
  return best;
}

// Two separate facts about an ACTIVE port's rate, reported in one finding: below the
// --expect-rate floor (error), and slower than the other ACTIVE ports of the same HCA model and
// link layer (a degraded link: lanes or speed grade lost; warning). Meeting the floor never hides
// the second: a 4X NDR port trained at 2X still meets --expect-rate 200.
void CheckRate(const Device& dev, const Port& port, std::optional<double> min_gbps,
               const PeerRates& peers, std::vector<Finding>& out) {
  if (!port.active()) return;  // a down port is reported by rdma.port.down
  std::string subject = PortSubject(dev, port);
  if (!port.rate) {
    // An ACTIVE port whose rate cannot be read or parsed: unknown, with or without a floor (a
    // degraded link would hide behind it).
    const ReadIssue* issue = FindIssue(port, "rate");
    if (issue) out.push_back(UnknownFinding(kPortRate, subject, issue->path, issue->error));
    return;
  }
  double peer = peers.at(PeerKey(dev, port));
  bool below_floor = min_gbps && port.rate->gbps + 1e-9 < *min_gbps;
  bool below_peers = port.rate->gbps + 1e-9 < peer;
  if (!below_floor && !below_peers) return;
  std::vector<std::string> facts;
  nlohmann::json evidence = {
      {"rate_gbps", port.rate->gbps}, {"width", port.rate->width}, {"speed", port.rate->speed}};
  if (min_gbps) evidence["expected_min_gbps"] = *min_gbps;
  if (below_floor) facts.push_back(fmt::format("expected at least {:g} Gb/s", *min_gbps));
  if (below_peers) {
    evidence["peer_rate_gbps"] = peer;
    facts.push_back(fmt::format("other {} ports run at {:g} Gb/s: degraded link (lanes or speed "
                                "grade lost)",
                                dev.hca_type.empty() ? dev.name : dev.hca_type, peer));
  }
  std::string message = fmt::format("link runs at {:g} Gb/s ({}X {})", port.rate->gbps,
                                    port.rate->width, port.rate->speed);
  for (size_t i = 0; i < facts.size(); ++i) message += (i ? "; " : ", ") + facts[i];
  if (min_gbps && !below_floor) message += fmt::format("; --expect-rate {:g} is met", *min_gbps);
  out.push_back({.check = kPortRate,
                 .severity = below_floor ? Severity::kError : Severity::kWarning,
                 .subject = subject,
                 .message = message,
                 .evidence = evidence});
}

void CheckLinkLayer(const Device& dev, const Port& port, const std::string& expected,
                    std::vector<Finding>& out) {
  std::string subject = PortSubject(dev, port);
  if (port.link_layer.empty()) {
    if (const ReadIssue* issue = FindIssue(port, "link_layer")) {
      out.push_back(UnknownFinding(kPortLinkLayer, subject, issue->path, issue->error));
    }
    return;
  }
  if (port.link_layer == expected) return;
  out.push_back({.check = kPortLinkLayer,
                 .severity = Severity::kError,
                 .subject = subject,
                 .message = fmt::format("link layer is {}, expected {}", port.link_layer, expected),
                 .evidence = {{"link_layer", port.link_layer}, {"expected", expected}}});
}

void CheckErrors(const Device& dev, const Port& port, std::vector<Finding>& out) {
  std::string subject = PortSubject(dev, port);
  std::vector<std::string> parts;
  nlohmann::json evidence = nlohmann::json::object();
  nlohmann::json saturated = nlohmann::json::array();
  for (const char* name : kErrorCounters) {
    std::string field = std::string("counters/") + name;
    if (const ReadIssue* issue = FindIssue(port, field)) {
      out.push_back(UnknownFinding(kPortErrors, subject, issue->path, issue->error));
      continue;
    }
    auto it = port.counters.find(name);
    if (it == port.counters.end() || !it->second.value || *it->second.value == 0) continue;
    evidence[name] = *it->second.value;
    if (it->second.saturated) {
      saturated.push_back(name);
      parts.push_back(fmt::format("{}>={} (saturated)", name, *it->second.value));
    } else {
      parts.push_back(fmt::format("{}={}", name, *it->second.value));
    }
  }
  if (parts.empty()) return;
  evidence["saturated"] = saturated;
  std::string list;
  for (size_t i = 0; i < parts.size(); ++i) list += (i ? ", " : "") + parts[i];
  out.push_back({.check = kPortErrors,
                 .severity = Severity::kWarning,
                 .subject = subject,
                 .message = "error counters are non-zero: " + list,
                 .evidence = evidence});
}

}  // namespace

std::string PortSubject(const Device& dev, const Port& port) {
  return dev.name + "/" + std::to_string(port.number);
}

void CheckScan(const Scan& scan, const Expectations& expect, std::vector<Finding>& out) {
  if (scan.error) {
    out.push_back(UnknownFinding(kDeviceMissing, "node", scan.error->path, scan.error->error));
    return;
  }
  int active = 0;
  nlohmann::json port_states = nlohmann::json::object();
  for (const auto& d : scan.devices) {
    for (const auto& p : d.ports) {
      if (p.active()) ++active;
      port_states[PortSubject(d, p)] = StateText(p.state);
    }
  }
  if (expect.active_ports) {
    if (active < *expect.active_ports) {
      std::string why =
          !scan.present ? " (no /sys/class/infiniband: no RDMA driver is loaded)" : "";
      out.push_back({.check = kDeviceMissing,
                     .severity = Severity::kError,
                     .subject = "node",
                     .message = fmt::format("expected {} ACTIVE RDMA ports, found {}{}",
                                            *expect.active_ports, active, why),
                     .evidence = {{"expected_active_ports", *expect.active_ports},
                                  {"active_ports", active},
                                  {"ports", port_states}}});
    }
  } else if (scan.devices.empty()) {
    out.push_back({.check = kDeviceMissing,
                   .severity = Severity::kInfo,
                   .subject = "node",
                   .message = scan.present
                                  ? "no RDMA devices in /sys/class/infiniband"
                                  : "no RDMA devices on this node (no /sys/class/infiniband)",
                   .evidence = {{"class_dir_present", scan.present}}});
  }

  PeerRates peers = BestPeerRates(scan);
  for (const auto& d : scan.devices) {
    for (const auto& p : d.ports) {
      CheckPortState(d, p, out);
      CheckRate(d, p, expect.min_rate_gbps, peers, out);
      if (expect.link_layer) CheckLinkLayer(d, p, *expect.link_layer, out);
      CheckErrors(d, p, out);
    }
  }
}

}  // namespace tocsin::rdma
