#include "k8s/watch.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

TEST(WatchEventTest, AddedPodIsDecodedWithItsVersion) {
  WatchEvent ev;
  Status st = DecodeWatchEvent(
      R"({"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p",)"
      R"("namespace":"ns","uid":"u1","resourceVersion":"1234"},"spec":{"nodeName":"n1",)"
      R"("containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}})",
      "Pod", "watch pods", ev);
  ASSERT_OK(st);
  EXPECT_EQ(ev.type, WatchEvent::Type::kAdded);
  EXPECT_EQ(ev.resource_version, "1234");
  ASSERT_EQ(ev.object.pods.size(), 1u);
  EXPECT_EQ(ev.object.pods[0].name, "p");
  EXPECT_EQ(ev.object.pods[0].node_name, "n1");
}

TEST(WatchEventTest, DeletedNodeAndAJobKeepTheirNames) {
  WatchEvent ev;
  ASSERT_TRUE(DecodeWatchEvent(R"({"type":"DELETED","object":{"metadata":{"name":"n",)"
                               R"("resourceVersion":"7"}}})",
                               "Node", "w", ev)
                  .ok());
  EXPECT_EQ(ev.type, WatchEvent::Type::kDeleted);
  ASSERT_EQ(ev.object.nodes.size(), 1u);  // the kind came from the watch
  EXPECT_EQ(ev.object.nodes[0].name, "n");
  ASSERT_TRUE(DecodeWatchEvent(R"({"type":"MODIFIED","object":{"kind":"PyTorchJob","metadata":)"
                               R"({"name":"j","namespace":"t","uid":"u","resourceVersion":"8"}}})",
                               "PyTorchJob", "w", ev)
                  .ok());
  ASSERT_EQ(ev.object.jobs.size(), 1u);
  EXPECT_EQ(ev.object.jobs[0].kind, "PyTorchJob");
  EXPECT_EQ(ev.object.jobs[0].uid, "u");
}

TEST(WatchEventTest, BookmarkAndExpiredError) {
  WatchEvent ev;
  ASSERT_TRUE(DecodeWatchEvent(R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1",)"
                               R"("metadata":{"resourceVersion":"99"}}})",
                               "Pod", "w", ev)
                  .ok());
  EXPECT_EQ(ev.type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(ev.resource_version, "99");
  EXPECT_TRUE(ev.object.pods.empty());
  ASSERT_TRUE(DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",)"
                               R"("metadata":{},"status":"Failure","message":"too old resource )"
                               R"j(version: 5 (90)","reason":"Expired","code":410}})j",
                               "Pod", "w", ev)
                  .ok());
  EXPECT_EQ(ev.type, WatchEvent::Type::kError);
  EXPECT_EQ(ev.code, 410);
  EXPECT_EQ(ev.reason, "Expired");
}

TEST(WatchEventTest, HostileLinesAreErrorsNotCrashes) {
  WatchEvent ev;
  for (const char* line :
       {"", "[]", "{}", R"({"type":"ADDED"})", R"({"type":"EXPLODE","object":{}})",
        R"({"type":"ADDED","object":{"metadata":{"name":"x"}}})",  // no resourceVersion
        R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"},"spec":{"nodeName":5}}})",
        R"({"type":"ERROR","object":{"code":"x"}})", R"({"type":"ADDED","object":{"metadata)"}) {
    Status st = DecodeWatchEvent(line, "Pod", "w", ev);
    EXPECT_FALSE(st.ok()) << line;
    EXPECT_NE(st.message().find("w"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace tocsin::k8s
