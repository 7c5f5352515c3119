// tocsin-podresources.so: a unary gRPC call over a unix socket (gRPC C++ without TLS:
// grpc++_unsecure), loaded by podresources::Call only where the agent attributes devices to
// pods. It links no tocsin library and no protobuf: see module_abi.h.

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "podresources/module_abi.h"

namespace tocsin::podresources {
namespace {

std::string CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(code));
  }
}

void Call(const CallOptions& o, CallResult* result) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(o.max_response_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(o.request.size() + 1024));
  // A fresh channel per call: a socket that went away is found at the next call, and no
  // connection or reconnection timer outlives it.
  auto channel = grpc::CreateCustomChannel("unix://" + o.socket_path,
                                           grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + o.timeout);
  grpc::Slice slice(o.request);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::CompletionQueue cq;
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(&context, o.method, request, &cq);
  call->StartCall();
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  bool got = cq.Next(&tag, &ok);  // the deadline bounds the wait
  cq.Shutdown();
  void* drained_tag = nullptr;
  bool drained_ok = false;
  while (cq.Next(&drained_tag, &drained_ok)) {
  }
  if (!got || !ok) {
    result->error = CallError::kFailed;
    result->message = "the call did not complete";
    return;
  }
  if (!status.ok()) {
    switch (status.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
        result->error = CallError::kUnavailable;
        break;
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        result->error = CallError::kDeadline;
        break;
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        result->error = CallError::kTooLarge;
        break;
      default:
        result->error = CallError::kFailed;
        break;
    }
    result->message = CodeName(status.error_code()) + ": " + status.error_message();
    return;
  }
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    result->error = CallError::kFailed;
    result->message = "the answer could not be read";
    return;
  }
  result->response.clear();
  result->response.reserve(response.Length());
  for (const auto& s : slices) {
    result->response.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  result->error = CallError::kNone;
}

}  // namespace
}  // namespace tocsin::podresources

extern "C" __attribute__((visibility("default"))) const char* tocsin_module_build_id() {
  return TOCSIN_MODULE_ID;
}

extern "C" __attribute__((visibility("default"))) void tocsin_podresources_call_v1(
    const tocsin::podresources::CallOptions& options, tocsin::podresources::CallResult* result) {
  tocsin::podresources::Call(options, result);
}

static_assert(std::is_same_v<decltype(&tocsin_podresources_call_v1), tocsin::podresources::CallFn>);
