#include "agent/kube_client.h"

#include "agent/kube_call.h"
#include "k8s/decode.h"
#include "sys/subprocess.h"

namespace tocsin::agent {
namespace {

class InProcess : public KubeClient {
 public:
  explicit InProcess(std::unique_ptr<k8s::ApiClient> client) : client_(std::move(client)) {}
  Result<std::string> Get(const std::string& path) override { return client_->Get(path); }
  Result<std::string> Send(const std::string& method, const std::string& path,
                           const std::string& body, const std::string& content_type) override {
    return client_->Send(method, path, body, content_type);
  }
  Status List(const std::string& collection, const std::string& kind, k8s::Snapshot& out) override {
    return client_->List(collection, kind, out);
  }

 private:
  std::unique_ptr<k8s::ApiClient> client_;
};

class Child : public KubeClient {
 public:
  explicit Child(KubeChildOptions o)
      : o_(std::move(o)),
        failures_(o_.failures ? o_.failures : std::make_shared<std::atomic<uint64_t>>(0)) {
    if (o_.deadline.count() <= 0) {
      auto backoffs = std::chrono::milliseconds(0);
      auto b = o_.client.backoff;
      for (int i = 1; i < o_.client.attempts; ++i, b *= 2) {
        backoffs += std::min(b, o_.client.max_backoff);
      }
      o_.deadline = std::max(1, o_.client.attempts) * o_.client.request_timeout + backoffs +
                    std::chrono::seconds(5);
    }
  }

  Result<std::string> Get(const std::string& path) override {
    return Call({"GET", path, "application/json", ""});
  }
  Result<std::string> Send(const std::string& method, const std::string& path,
                           const std::string& body, const std::string& content_type) override {
    return Call({method, path, content_type, body});
  }
  Status List(const std::string& collection, const std::string& kind, k8s::Snapshot& out) override {
    TOCSIN_ASSIGN_OR_RETURN(std::string list, Call({"LIST", collection, kind, ""}));
    return k8s::DecodeJson(list, "LIST " + collection, out);
  }
  uint64_t failures() const override { return failures_->load(); }

 private:
  Result<std::string> Call(const KubeRequest& request) {
    TOCSIN_ASSIGN_OR_RETURN(std::string input, EncodeKubeRequest(request));
    std::string what = request.method + " " + request.path;
    sys::ProcessOptions p;
    p.input = std::move(input);
    p.timeout = o_.deadline;
    p.max_output = kMaxKubeCallAnswer + 64;
    p.die_with_parent = true;  // an abandoned call (the agent stopping) never outlives the agent
    std::vector<std::string> argv = {o_.self_exe,
                                     "agent",
                                     "--kube-call",
                                     "--request-timeout",
                                     std::to_string(o_.client.request_timeout.count()) + "ms",
                                     "--kube-call-attempts",
                                     std::to_string(o_.client.attempts)};
    if (!o_.kubeconfig.kubeconfig.empty()) {
      argv.insert(argv.end(), {"--kubeconfig", o_.kubeconfig.kubeconfig});
    }
    if (!o_.kubeconfig.context.empty()) {
      argv.insert(argv.end(), {"--context", o_.kubeconfig.context});
    }
    auto r = sys::RunProcess(argv, p);
    if (!r.ok()) {
      ++*failures_;
      return r.status().WithPrefix(what + ": kube-call child");
    }
    if (r->exit_code != 0) {
      ++*failures_;
      std::string why = r->err.substr(0, 512);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      return Status::Unavailable(what + ": kube-call child: exit code " +
                                 std::to_string(r->exit_code) + (why.empty() ? "" : ": " + why));
    }
    auto answer = DecodeKubeAnswer(r->out);
    if (!answer.ok()) {
      ++*failures_;
      return answer.status().WithPrefix(what);
    }
    if (!answer->ok() && answer->status().message().size() > 1024) {
      // The API's own message, as the child carried it: capped for the logs.
      return Status(answer->status().code(), answer->status().message().substr(0, 1024) + "...");
    }
    return std::move(*answer);
  }

  KubeChildOptions o_;
  std::shared_ptr<std::atomic<uint64_t>> failures_;
};

}  // namespace

std::unique_ptr<KubeClient> InProcessKubeClient(std::unique_ptr<k8s::ApiClient> client) {
  return std::make_unique<InProcess>(std::move(client));
}

std::unique_ptr<KubeClient> ChildKubeClient(KubeChildOptions options) {
  return std::make_unique<Child>(std::move(options));
}

}  // namespace tocsin::agent
