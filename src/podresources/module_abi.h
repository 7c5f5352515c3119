#pragma once

// What the PodResources module (tocsin-podresources.so) and the binary that loads it share. Both
// come from the same build with the same compiler and standard library, so C++ types cross: this
// header holds no tocsin library type, only the standard library's.

#include <chrono>
#include <cstddef>
#include <string>

namespace tocsin::podresources {

// One unary gRPC call over a unix socket, request and answer as serialized bytes (the module
// knows no message type: podresources/list.cc decodes the answer).
struct CallOptions {
  std::string socket_path;  // "/var/lib/kubelet/pod-resources/kubelet.sock"
  std::string method;       // "/v1.PodResourcesLister/List"
  std::string request;      // the serialized request ("" for an empty message)
  std::chrono::milliseconds timeout{5000};
  size_t max_response_bytes = 4 << 20;  // larger answers fail (gRPC's RESOURCE_EXHAUSTED)
};

// Why a call failed: kUnavailable (no socket, nobody listening, the connection broke),
// kDeadline (no answer in time), kTooLarge (over max_response_bytes), kFailed (any other gRPC
// status: the server refused or does not serve the method).
enum class CallError { kNone, kUnavailable, kDeadline, kTooLarge, kFailed };

struct CallResult {
  CallError error = CallError::kNone;
  std::string message;   // gRPC's status code name and message when it failed
  std::string response;  // the serialized answer when it did not
};

// The module's one entry point, resolved by name.
inline constexpr char kCallSymbol[] = "tocsin_podresources_call_v1";
using CallFn = void (*)(const CallOptions& options, CallResult* result);

}  // namespace tocsin::podresources
