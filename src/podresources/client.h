#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "base/status.h"
#include "podresources/list.h"
#include "podresources/module_abi.h"

namespace tocsin::podresources {

// The kubelet's PodResources socket and method (k8s.io/kubelet/pkg/apis/podresources/v1).
inline constexpr char kDefaultSocket[] = "/var/lib/kubelet/pod-resources/kubelet.sock";
inline constexpr char kListMethod[] = "/v1.PodResourcesLister/List";

// One unary call through the module tocsin-podresources.so, loaded on the first call
// (sys::LoadModuleSymbol): only an agent that attributes devices to pods maps gRPC. A socket
// that is not there is NotFound without loading the module; a module that is missing or does
// not load, or a server that does not answer, is Unavailable; no answer in time is Timeout; an
// answer over max_response_bytes or any other gRPC status is IoError, with gRPC's reason.
Result<std::string> Call(const CallOptions& options);

// `List` on the socket, decoded and capped (ParseListResponse).
Result<PodList> List(const std::string& socket_path, std::chrono::milliseconds timeout,
                     const Limits& limits = {});

// The same call made by a child process, `self_exe agent --pod-resources-call SOCKET
// --pod-resources-call-timeout MS` (sys::RunProcess, killed at `timeout` and a second), which
// writes the answer's bytes to its stdout: the caller (the agent, on every node) never maps gRPC
// (7 MiB of RSS). NotFound without a child when the socket is not there; the child's error
// otherwise (Unavailable with its message, Timeout).
Result<PodList> ListInChild(const std::string& self_exe, const std::string& socket_path,
                            std::chrono::milliseconds timeout, const Limits& limits = {});

// What the child runs: Call(List) on `socket_path`, the answer's bytes to `out`; its exit code
// (0, or 1 with the reason written to `err`).
int RunCallChild(const std::string& socket_path, std::chrono::milliseconds timeout, FILE* out,
                 FILE* err);

}  // namespace tocsin::podresources
