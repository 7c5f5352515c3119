#include "storage/lustre.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::storage {
namespace {

TEST(LustreTest, SourceWithFailoverAndMultirailNids) {
  auto s = ParseLustreSource("10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/testfs/sub/dir");
  ASSERT_OK(s);
  EXPECT_EQ(s->fsname, "testfs");
  EXPECT_EQ(s->subdir, "/sub/dir");
  ASSERT_EQ(s->mgs_nodes.size(), 2u);
  EXPECT_EQ(s->mgs_nodes[0].size(), 2u);
  EXPECT_EQ(s->mgs_nodes[1][0], "10.0.0.2@o2ib");
  EXPECT_FALSE(ParseLustreSource("/dev/sda1").ok());
  EXPECT_FALSE(ParseLustreSource("10.0.0.1@tcp:/").ok());
  EXPECT_FALSE(ParseLustreSource("mgs.example:/testfs").ok());  // not a NID
}

constexpr const char* kImport =
    "import:\n"
    "    name: testfs-OST0001-osc-ffff8c5a4b6e9000\n"
    "    target: testfs-OST0001_UUID\n"
    "    state: EVICTED\n"
    "    connect_flags: [ write_grant, server_lock, version ]\n"
    "    connect_data:\n"
    "       flags: 0xa0425af2e3440078\n"
    "    import_flags: [ replayable, pingable, connect_tried ]\n"
    "    connection:\n"
    "       failover_nids: [ \"10.0.0.2@tcp\", \"10.0.0.3@tcp\" ]\n"
    "       current_connection: \"10.0.0.2@tcp\"\n"
    "       connection_attempts: 7\n"
    "       generation: 3\n"
    "       in-progress_invalidations: 0\n"
    "       idle: 3 sec\n"
    "    rpcs:\n"
    "       inflight: 2\n"
    "       unregistering: 0\n"
    "       timeouts: 14\n"
    "       avg_waittime: 512 usecs\n"
    "    service_estimates:\n"
    "       services: 1 sec\n"
    "       network: 1 sec\n";

TEST(LustreTest, Import) {
  auto i = ParseLustreImport(kImport);
  ASSERT_OK(i);
  EXPECT_EQ(i->name, "testfs-OST0001-osc-ffff8c5a4b6e9000");
  EXPECT_EQ(i->target, "testfs-OST0001_UUID");
  EXPECT_EQ(i->state, "EVICTED");
  EXPECT_EQ(i->current_connection, "10.0.0.2@tcp");
  ASSERT_EQ(i->failover_nids.size(), 2u);
  EXPECT_EQ(i->failover_nids[1], "10.0.0.3@tcp");
  EXPECT_EQ(i->connection_attempts, 7);
  EXPECT_EQ(i->rpcs_timeouts, 14);
  EXPECT_EQ(i->avg_waittime_usecs, 512);
}

TEST(LustreTest, TruncatedImportIsAnError) {
  std::string text = kImport;
  auto cut = ParseLustreImport(text.substr(0, text.find("    state:")));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("state"), std::string::npos);
  EXPECT_FALSE(ParseLustreImport("").ok());
  EXPECT_FALSE(ParseLustreImport("\x7f"
                                 "ELF\x02\x01")
                   .ok());
}

TEST(LustreTest, StateHistoryGivesOnset) {
  auto s = ParseLustreState(
      "current_state: EVICTED\n"
      "state_history:\n"
      " - [ 1753990000, CONNECTING ]\n"
      " - [ 1753990001, FULL ]\n"
      " - [ 1764300000, DISCONN ]\n"
      " - [ 1764300005, CONNECTING ]\n"
      " - [ 1764300010, EVICTED ]\n");
  ASSERT_OK(s);
  EXPECT_EQ(s->history.size(), 5u);
  EXPECT_EQ(UnhealthySince(*s), 1764300000);
  auto healthy = ParseLustreState("current_state: IDLE\nstate_history:\n - [ 1, FULL ]\n");
  EXPECT_FALSE(UnhealthySince(*healthy));
  EXPECT_FALSE(ParseLustreState("state_history:\n").ok());
  EXPECT_FALSE(ParseLustreState("current_state: FULL\n - [ x, FULL ]\n").ok());
  EXPECT_FALSE(ParseLustreState("current_state: FULL\n - [ 99999999999999, FULL ]\n").ok());
}

TEST(LustreTest, StatesClassified) {
  EXPECT_TRUE(IsHealthyImportState("FULL"));
  EXPECT_TRUE(IsHealthyImportState("IDLE"));
  EXPECT_FALSE(IsHealthyImportState("EVICTED"));
  EXPECT_TRUE(IsTransientImportState("REPLAY_WAIT"));
  EXPECT_FALSE(IsTransientImportState("CLOSED"));
}

TEST(LustreTest, StatsAcrossVersions) {
  // 2.15-style header, AVGMINMAX and STDDEV counters; 2.12-style "[regs]".
  auto s = ParseLustreStats(
      "snapshot_time             1754000000.123456789 secs.nsecs\n"
      "start_time                1753990000.000000000 secs.nsecs\n"
      "elapsed_time              10000.123456789 secs.nsecs\n"
      "read_bytes                1024 samples [bytes] 4096 1048576 536870912 281474976710656\n"
      "open                      12 samples [usec] 15 230 910 120000\n"
      "getattr                   40 samples [regs]\n");
  ASSERT_OK(s);
  EXPECT_DOUBLE_EQ(*s->snapshot_time, 1754000000.123456789);
  ASSERT_EQ(s->counters.size(), 3u);
  EXPECT_EQ(s->counters[0].sum, 536870912u);
  EXPECT_EQ(s->counters[0].sumsq, 281474976710656u);
  EXPECT_EQ(s->counters[1].unit, "usec");
  EXPECT_FALSE(s->counters[2].min.has_value());
  EXPECT_FALSE(ParseLustreStats("read_bytes 12 things\n").ok());
  EXPECT_FALSE(ParseLustreStats("read_bytes x samples [bytes]\n").ok());
}

}  // namespace
}  // namespace tocsin::storage
