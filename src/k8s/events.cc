#include "k8s/events.h"

#include <nlohmann/json.hpp>

namespace tocsin::k8s {

EventPost EventRequest(const EventSpec& e) {
  std::string ts = FormatRfc3339(e.time);
  nlohmann::json involved = {{"apiVersion", e.api_version}, {"kind", e.kind}, {"name", e.name}};
  if (!e.object_ns.empty()) involved["namespace"] = e.object_ns;
  if (!e.uid.empty()) involved["uid"] = e.uid;
  std::string message = e.message;
  if (message.size() > 1024) {
    message.resize(1021);
    while (!message.empty() && (static_cast<unsigned char>(message.back()) & 0xC0) == 0x80) {
      message.pop_back();  // not in the middle of a UTF-8 sequence
    }
    if (!message.empty() && static_cast<unsigned char>(message.back()) >= 0xC0) message.pop_back();
    message += "...";
  }
  nlohmann::json event = {{"apiVersion", "v1"},
                          {"kind", "Event"},
                          {"metadata", {{"generateName", e.name + "."}, {"namespace", e.ns}}},
                          {"involvedObject", involved},
                          {"reason", e.reason},
                          {"message", message},
                          {"type", e.type},
                          {"source", {{"component", e.component}, {"host", e.instance}}},
                          {"reportingComponent", e.component},
                          {"reportingInstance", e.instance},
                          {"firstTimestamp", ts},
                          {"lastTimestamp", ts},
                          {"count", 1}};
  return {"/api/v1/namespaces/" + e.ns + "/events",
          event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

Status PostEvent(ApiClient& client, const EventSpec& e) {
  EventPost post = EventRequest(e);
  auto r = client.Send("POST", post.path, post.body, "application/json");
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace tocsin::k8s
