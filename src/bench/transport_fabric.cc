#include <dlfcn.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>

#include <cstring>
#include <map>
#include <mutex>

#include "base/strings.h"
#include "bench/transport.h"

#include <algorithm>

namespace tocsin::bench {
namespace {

// The libfabric entry points called here (the rest are inline calls through each object's ops),
// resolved with dlopen: only `bench net --transport fabric` loads libfabric and its provider
// libraries (verbs, psm, efa: 2 MiB of RSS), and tocsin runs where libfabric is not installed.
struct FiApi {
  int (*getinfo)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**);
  void (*freeinfo)(fi_info*);
  fi_info* (*dupinfo)(const fi_info*);
  int (*fabric)(fi_fabric_attr*, fid_fabric**, void*);
  const char* (*strerror)(int);
};

Result<const FiApi*> LoadFabric() {
  static std::once_flag once;
  static FiApi api{};
  static Status status;
  std::call_once(once, [] {
    void* lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      status = Status::Unavailable(std::string("cannot load libfabric.so.1 (libfabric1): ") +
                                   (err ? err : "dlopen failed"));
      return;
    }
    api.getinfo = reinterpret_cast<decltype(api.getinfo)>(dlsym(lib, "fi_getinfo"));
    api.freeinfo = reinterpret_cast<decltype(api.freeinfo)>(dlsym(lib, "fi_freeinfo"));
    api.dupinfo = reinterpret_cast<decltype(api.dupinfo)>(dlsym(lib, "fi_dupinfo"));
    api.fabric = reinterpret_cast<decltype(api.fabric)>(dlsym(lib, "fi_fabric"));
    api.strerror = reinterpret_cast<decltype(api.strerror)>(dlsym(lib, "fi_strerror"));
    if (!api.getinfo || !api.freeinfo || !api.dupinfo || !api.fabric || !api.strerror) {
      status = Status::Unavailable(
          "libfabric.so.1 lacks fi_getinfo, fi_freeinfo, fi_dupinfo, "
          "fi_fabric or fi_strerror");
    }
  });
  if (!status.ok()) return status;
  return &api;
}

// After a successful LoadFabric (FabricTransport::Open checks it first).
const FiApi& Fi() { return **LoadFabric(); }

std::string FiError(const char* call, int rc) {
  return std::string(call) + ": " + Fi().strerror(-rc) + " (" + std::to_string(rc) + ")";
}

// 60-bit tags: per-peer sequence (20 bits), sender rank (16), chunk (24). Every message of a
// SendRecv call is unambiguous even when a fast peer's next call arrives early.
uint64_t Tag(uint64_t seq, uint64_t sender, uint64_t chunk) {
  return ((seq & 0xfffff) << 40) | ((sender & 0xffff) << 24) | (chunk & 0xffffff);
}

template <typename T>
void CloseFid(T*& f) {
  if (f != nullptr) fi_close(&f->fid);
  f = nullptr;
}

class FabricTransport : public Transport {
 public:
  FabricTransport(int rank, int abort_fd) : rank_(rank), abort_fd_(abort_fd) {}
  ~FabricTransport() override {
    for (auto& [base, region] : regions_) CloseFid(region.mr);
    CloseFid(ep_);
    CloseFid(av_);
    CloseFid(cq_);
    CloseFid(domain_);
    CloseFid(fabric_);
    if (fi_ != nullptr) Fi().freeinfo(fi_);
  }

  Status Open(const std::string& provider, const std::string& ip) {
    if (auto api = LoadFabric(); !api.ok()) return api.status();
    // A receive matches only the address it names (the peers the coordinator vouched for) where
    // the provider can (FI_DIRECTED_RECV); else any sender's message would match it.
    // The address binding comes first: a provider bound to the job's address without
    // FI_DIRECTED_RECV is preferred to an unbound one with it (another NIC, or shm).
    int rc = -FI_ENODATA;
    for (bool bound : {true, false}) {
      if (bound && ip.empty()) continue;
      rc = Lookup(provider, bound ? ip : "", FI_TAGGED | FI_DIRECTED_RECV);
      info_.sources_checked = rc == 0;
      if (rc != 0) rc = Lookup(provider, bound ? ip : "", FI_TAGGED);
      if (rc == 0) break;
    }
    if (rc != 0) {
      return Status::Unavailable("libfabric offers no reliable tagged endpoint" +
                                 (provider.empty() ? std::string() : " for provider " + provider) +
                                 ": " + FiError("fi_getinfo", rc));
    }
    return Described(ip);
  }

  int Lookup(const std::string& provider, const std::string& ip, uint64_t caps) {
    fi_info* hints = Fi().dupinfo(nullptr);  // fi_allocinfo()
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
    // Bound to the address the coordinator sees (the job's network); "" asks without it, for
    // providers without IP addressing (shm).
    int rc = ip.empty()
                 ? Fi().getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &fi_)
                 : Fi().getinfo(FI_VERSION(1, 9), ip.c_str(), nullptr, FI_SOURCE, hints, &fi_);
    Fi().freeinfo(hints);
    return rc;
  }

  Status Described(const std::string& ip) {
    info_.kind = "fabric";
    info_.provider = fi_->fabric_attr->prov_name ? fi_->fabric_attr->prov_name : "";
    info_.fabric = fi_->fabric_attr->name ? fi_->fabric_attr->name : "";
    info_.domain = fi_->domain_attr->name ? fi_->domain_attr->name : "";
    info_.ip = ip;
    info_.interface = InterfaceOf(ip);
    info_.rdma = IsRdmaProvider(info_.provider);
    max_msg_ = std::min<size_t>(fi_->ep_attr->max_msg_size, 16u << 20);
    mr_local_ = (fi_->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
    return Status::Ok();
  }

  Status Enable() {
    if (int rc = Fi().fabric(fi_->fabric_attr, &fabric_, nullptr)) return Err("fi_fabric", rc);
    if (int rc = fi_domain(fabric_, fi_, &domain_, nullptr)) return Err("fi_domain", rc);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.wait_obj = FI_WAIT_UNSPEC;  // block in fi_cq_sread instead of spinning
    if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) != 0) {
      cq_attr.wait_obj = FI_WAIT_NONE;
      waitable_ = false;
      if (int rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr)) return Err("fi_cq_open", rc);
    }
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    if (int rc = fi_av_open(domain_, &av_attr, &av_, nullptr)) return Err("fi_av_open", rc);
    if (int rc = fi_endpoint(domain_, fi_, &ep_, nullptr)) return Err("fi_endpoint", rc);
    if (int rc = fi_ep_bind(ep_, &av_->fid, 0)) return Err("fi_ep_bind(av)", rc);
    if (int rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV))
      return Err("fi_ep_bind(cq)", rc);
    if (int rc = fi_enable(ep_)) return Err("fi_enable", rc);
    char name[256];
    size_t len = sizeof name;
    if (int rc = fi_getname(&ep_->fid, name, &len)) return Err("fi_getname", rc);
    address_ = EncodeBase64(std::string_view(name, len));
    return Status::Ok();
  }

  const TransportInfo& info() const override { return info_; }
  std::string address() const override { return address_; }

  // libfabric has no handshake here to carry the run's secret: the data plane over libfabric is
  // not authenticated (the address vector holds the roster's peers only; receives name them).
  Status Connect(const std::vector<ranks::Peer>& peers, const std::string& /*secret*/,
                 Deadline /*deadline*/) override {
    peers_ = peers;
    addrs_.assign(peers.size(), FI_ADDR_UNSPEC);
    send_seq_.assign(peers.size(), 0);
    recv_seq_.assign(peers.size(), 0);
    for (size_t j = 0; j < peers.size(); ++j) {
      auto blob = DecodeBase64(peers[j].address);
      if (!blob) return Status::ParseError(peers[j].Name() + ": not a libfabric address");
      int rc = fi_av_insert(av_, blob->data(), 1, &addrs_[j], 0, nullptr);
      if (rc != 1) return Status::Unavailable(peers[j].Name() + ": " + FiError("fi_av_insert", rc));
    }
    return Status::Ok();
  }

  Status RegisterBuffer(void* buf, size_t len) override {
    if (!mr_local_) return Status::Ok();
    Region r{len, nullptr};
    int rc = fi_mr_reg(domain_, buf, len, FI_SEND | FI_RECV, 0, 0, 0, &r.mr, nullptr);
    if (rc != 0) return Err("fi_mr_reg", rc);
    regions_[reinterpret_cast<uintptr_t>(buf)] = r;
    return Status::Ok();
  }

  // Every transfer posted at once, in messages of at most max_msg_ bytes (an empty transfer is
  // one empty message), receives first. Slices are not delivered early: the completion queue
  // says nothing about which bytes of a message are in, so on_slice runs once all are done.
  Status Exchange(std::span<const Transfer> xs, size_t slice, const SliceDone& on_slice,
                  Deadline deadline) override {
    if (xs.empty()) return Status::Ok();
    if (xs.size() > kMaxTransfers) return Status::InvalidArgument("too many transfers");
    auto messages = [&](const Transfer& x) {
      return std::max<size_t>(1, (x.len + max_msg_ - 1) / max_msg_);
    };
    size_t total = 0;
    for (const Transfer& x : xs) total += messages(x);
    contexts_.resize(total);  // before posting: the provider holds their addresses
    pending_ = 0;
    size_t next_context = 0;
    int watched = xs[0].peer;  // the peer a stall is blamed on: the first receive's, else a send's
    for (const Transfer& x : xs) {
      if (!x.send) {
        watched = x.peer;
        break;
      }
    }
    for (bool send : {false, true}) {
      for (const Transfer& x : xs) {
        if (x.send != send) continue;
        uint64_t seq = send ? send_seq_[x.peer]++ : recv_seq_[x.peer]++;
        for (size_t c = 0, m = messages(x); c < m; ++c) {
          size_t off = c * max_msg_, len = std::min(max_msg_, x.len - off);
          char* p = static_cast<char*>(x.buf) + off;
          fi_context* ctx = &contexts_[next_context++];
          Status st = Post(deadline, x.peer, [&] {
            return send ? fi_tsend(ep_, p, len, Desc(p), addrs_[x.peer], Tag(seq, rank_, c), ctx)
                        : fi_trecv(ep_, p, len, Desc(p), addrs_[x.peer], Tag(seq, x.peer, c), 0,
                                   ctx);
          });
          if (!st.ok()) return st;
        }
      }
    }
    while (pending_ > 0) {
      Status st = Progress(deadline, watched);
      if (!st.ok()) return st;
    }
    HandOverSlices(xs, slice, on_slice);
    return Status::Ok();
  }

 private:
  struct Region {
    size_t len;
    fid_mr* mr;
  };

  Status Err(const char* call, int rc) {
    return Status::Unavailable("libfabric " + info_.provider + ": " + FiError(call, rc));
  }

  void* Desc(const void* p) {
    if (!mr_local_) return nullptr;
    auto addr = reinterpret_cast<uintptr_t>(p);
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) return nullptr;
    --it;
    return addr < it->first + it->second.len ? fi_mr_desc(it->second.mr) : nullptr;
  }

  template <typename F>
  Status Post(Deadline deadline, int peer, F op) {
    while (true) {
      ssize_t rc = op();
      if (rc == 0) {
        ++pending_;
        return Status::Ok();
      }
      if (rc != -FI_EAGAIN) return Err("posting to " + peers_[peer].Name(), static_cast<int>(rc));
      Status st = Progress(deadline, peer);
      if (!st.ok()) return st;
    }
  }
  Status Err(const std::string& what, int rc) {
    return Status::Unavailable("libfabric " + info_.provider + ": " + what + ": " +
                               Fi().strerror(-rc));
  }

  // Reads completions (waiting up to 10 ms), and checks the deadline and the abort fd.
  Status Progress(Deadline deadline, int peer) {
    fi_cq_tagged_entry entries[16];
    ssize_t n =
        waitable_ ? fi_cq_sread(cq_, entries, 16, nullptr, 10) : fi_cq_read(cq_, entries, 16);
    if (n > 0) {
      pending_ -= static_cast<int>(n);
      return Status::Ok();
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq_, &err, 0);
      const char* detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0);
      failed_peer_ = peer;
      return Status::IoError("libfabric " + info_.provider + ": a transfer with " +
                             peers_[peer].Name() + " failed: " + Fi().strerror(err.err) +
                             (detail ? std::string(" (") + detail + ")" : ""));
    }
    if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT && n != -FI_EINTR) {
      return Err("fi_cq_read", static_cast<int>(n));
    }
    if (!waitable_) sched_yield();
    pollfd p{abort_fd_, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) return Status(StatusCode::kUnavailable, "aborted");
    if (ranks::SteadyClock::now() >= deadline) {
      failed_peer_ = peer;
      return Status::Timeout("waiting on " + peers_[peer].Name() + ": no completion before the " +
                             "deadline (" + std::to_string(pending_) + " transfers pending)");
    }
    return Status::Ok();
  }

  int rank_;
  int abort_fd_;
  TransportInfo info_;
  fi_info* fi_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  bool waitable_ = true;
  bool mr_local_ = false;
  size_t max_msg_ = 1 << 20;
  std::string address_;
  std::vector<ranks::Peer> peers_;
  std::vector<fi_addr_t> addrs_;
  std::vector<uint64_t> send_seq_, recv_seq_;
  std::vector<fi_context> contexts_;
  std::map<uintptr_t, Region> regions_;
  int pending_ = 0;
};

}  // namespace

Result<std::vector<std::string>> OfferedFabricProviders() {
  if (auto api = LoadFabric(); !api.ok()) return api.status();
  fi_info* hints = Fi().dupinfo(nullptr);
  hints->caps = FI_TAGGED;
  hints->ep_attr->type = FI_EP_RDM;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  fi_info* list = nullptr;
  int rc = Fi().getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
  Fi().freeinfo(hints);
  std::vector<std::string> out;
  if (rc != 0) return out;  // none at all
  for (fi_info* i = list; i != nullptr; i = i->next) {
    std::string name = i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  Fi().freeinfo(list);
  return out;
}

Result<std::unique_ptr<Transport>> CreateFabricTransport(const std::string& provider,
                                                         const std::string& ip, int rank,
                                                         int abort_fd) {
  auto t = std::make_unique<FabricTransport>(rank, abort_fd);
  if (Status st = t->Open(provider, ip); !st.ok()) return st;
  if (Status st = t->Enable(); !st.ok()) return st;
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace tocsin::bench
