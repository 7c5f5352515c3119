#pragma once

#include <string>

#include "base/status.h"
#include "base/time.h"
#include "k8s/api_client.h"

namespace tocsin::k8s {

// A core/v1 Event about one object, as tocsin's agent and controller post them.
struct EventSpec {
  std::string ns;  // the Event's namespace: the object's, or a chosen one for cluster-scoped kinds
  // involvedObject
  std::string api_version;  // "v1", "apps/v1", "batch/v1", ...
  std::string kind, object_ns, name, uid;
  std::string type;  // "Warning" or "Normal"
  std::string reason;
  std::string message;    // cut to 1 KiB (the API refuses longer ones)
  std::string component;  // source.component and reportingComponent
  std::string instance;   // source.host and reportingInstance
  TimePoint time;
};

// The POST that creates the Event (a generated name from the object's): its path and JSON body
// (application/json).
struct EventPost {
  std::string path, body;
};
EventPost EventRequest(const EventSpec& event);

// POSTs the Event (EventRequest); errors as ApiClient::Send's.
Status PostEvent(ApiClient& client, const EventSpec& event);

}  // namespace tocsin::k8s
