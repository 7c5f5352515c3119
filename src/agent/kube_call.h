#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"

namespace tocsin::agent {

// The protocol between the agent and its `tocsin agent --kube-call` child (ChildKubeClient).
//
// Request, on the child's stdin:
//   tocsin-kube-call/1\n METHOD\n PATH\n TYPE\n LENGTH\n BODY
// METHOD is GET, PATCH, POST, PUT or LIST; PATH starts with '/' (its query included); TYPE is
// the body's content type, or for LIST the kind of the items; both printable ASCII without
// spaces. BODY is exactly LENGTH bytes.
//
// Answer, on its stdout:
//   tocsin-kube-call/1 CODE LENGTH\n BYTES
// CODE is a StatusCode's number: 0 and the response body (LIST: the items as one List, as
// k8s::EncodeRawList writes it), or the error's code and message, exactly LENGTH bytes and
// nothing after. Anything else is a malformed answer.
inline constexpr char kKubeCallMagic[] = "tocsin-kube-call/1";
inline constexpr size_t kMaxKubeCallBody = 1 << 20;     // a request's body
inline constexpr size_t kMaxKubeCallAnswer = 16 << 20;  // an answer's bytes

struct KubeRequest {
  std::string method;  // GET, PATCH, POST, PUT, LIST
  std::string path;
  std::string type;  // content type, or LIST's kind
  std::string body;
};

// InvalidArgument for what DecodeKubeRequest would refuse.
Result<std::string> EncodeKubeRequest(const KubeRequest& request);
Result<KubeRequest> DecodeKubeRequest(std::string_view text);

std::string EncodeKubeAnswer(const Result<std::string>& answer);
// The answer the child carried (its body, or its error), or ParseError for a malformed answer
// (what is wrong, with a short excerpt).
Result<Result<std::string>> DecodeKubeAnswer(std::string_view text);

struct KubeCallFlags {
  k8s::KubeconfigOptions kubeconfig;
  k8s::ClientOptions client;
};

// The child: reads one request from `in` (at most the protocol's caps), resolves the cluster's
// access as the agent does, makes the call through an ApiClient and writes the answer to `out`.
// Exit code 0 when an answer was written (an API error too), 2 with the reason on `err` when the
// request could not be read or the answer not written.
int RunKubeCallChild(const KubeCallFlags& flags, FILE* in, FILE* out, FILE* err);

}  // namespace tocsin::agent
