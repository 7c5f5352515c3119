#include "canary/attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace tocsin::canary {
namespace {

BlockPair Key(const std::string& x, const std::string& y) {
  return x < y ? BlockPair{x, y} : BlockPair{y, x};
}

template <typename T>
void AddCapped(std::vector<T>& v, const T& x, size_t cap) {
  if (v.size() < cap && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

void StartStreak(std::optional<TimePoint>& since, TimePoint at) {
  if (!since || at < *since) since = at;
}

void Pass(std::optional<TimePoint>& last_pass, std::optional<TimePoint>& fail_since, TimePoint at) {
  if (!last_pass || at > *last_pass) last_pass = at;
  if (fail_since && at >= *fail_since) fail_since.reset();
}

bool Exonerated(const History& h, const std::string& node, TimePoint at) {
  auto it = h.nodes.find(node);
  return it != h.nodes.end() && it->second.last_pass && *it->second.last_pass >= at;
}

bool Blamed(const History& h, const std::string& node) {
  auto it = h.nodes.find(node);
  return it != h.nodes.end() && it->second.blamed;
}

bool Across(const Failure& f, const BlockPair& p) {
  return (f.block_a == p.first && f.block_b == p.second) ||
         (f.block_a == p.second && f.block_b == p.first);
}

class Resolver {
 public:
  Resolver(History& h, TimePoint now, std::chrono::seconds window) : h_(h), recent_(now - window) {}

  // Applies rules 3a-3d until nothing changes, to the failures that what changed can touch: those
  // of the `touched` nodes or across the `touched_block` pair, then those of the nodes blamed and
  // of the endpoints of settled failures (their counts of open failures fell), and so on.
  // With `all`, the first pass takes every failure (RecordRound).
  void Run(std::set<std::string> touched, std::optional<BlockPair> touched_block,
           bool all = false) {
    settled_.assign(h_.failures.size(), false);
    std::vector<bool>& settled = settled_;
    if (all) CountAll();
    while (all || !touched.empty() || touched_block) {
      std::set<std::string> next;
      for (size_t i = 0; i < h_.failures.size(); ++i) {
        const Failure& f = h_.failures[i];
        if (settled[i] || !(all || touched.contains(f.a) || touched.contains(f.b) ||
                            (touched_block && Across(f, *touched_block)))) {
          continue;
        }
        std::vector<std::string> blamed;
        if (!Resolve(f, blamed)) continue;
        settled[i] = true;
        for (const std::string* n : {&f.a, &f.b}) {
          auto open = open_.find(*n);
          if (open != open_.end() && !Exonerated(h_, *n, f.at)) --open->second;
          next.insert(*n);
        }
        next.insert(blamed.begin(), blamed.end());
      }
      touched = std::move(next);
      touched_block.reset();
      all = false;
    }
    size_t out = 0;
    for (size_t i = 0; i < h_.failures.size(); ++i) {
      if (settled[i]) continue;
      if (out != i) h_.failures[out] = std::move(h_.failures[i]);
      ++out;
    }
    h_.failures.resize(out);
  }

 private:
  void CountAll() {
    for (const Failure& f : h_.failures) {
      for (const std::string* n : {&f.a, &f.b}) {
        int& count = open_[*n];
        if (!Exonerated(h_, *n, f.at)) ++count;
      }
    }
  }

  // Failures of `p` it is not exonerated from (counted once per Run, then kept up to date).
  int Open(const std::string& p) {
    auto [it, added] = open_.try_emplace(p, 0);
    if (added) {
      for (size_t i = 0; i < h_.failures.size(); ++i) {
        const Failure& f = h_.failures[i];
        if (!settled_[i] && (f.a == p || f.b == p) && !Exonerated(h_, p, f.at)) ++it->second;
      }
    }
    return it->second;
  }

  bool Good(const std::string& p, const Failure& f) {
    auto it = h_.nodes.find(p);
    if (it == h_.nodes.end() || it->second.blamed || !it->second.last_pass) return false;
    if (*it->second.last_pass < recent_) return false;
    if (*it->second.last_pass >= f.at) return true;
    return Open(p) <= 1;
  }

  bool PathOk(const Failure& f) const {
    if (f.block_a == f.block_b) return true;
    auto it = h_.block_pairs.find(Key(f.block_a, f.block_b));
    return it != h_.block_pairs.end() && it->second.last_pass && *it->second.last_pass >= f.at;
  }

  // Rule 3b for x failing with p.
  bool Blames(const std::string& x, const std::string& p, const Failure& f) {
    if (Exonerated(h_, x, f.at) || !PathOk(f) || !Good(p, f)) return false;
    return Exonerated(h_, p, f.at) || !Good(x, f);
  }

  void Blame(const std::string& x, const std::string& partner, const Failure& f,
             std::vector<std::string>& blamed) {
    blamed.push_back(x);
    NodeRecord& r = h_.nodes[x];
    r.blamed = true;
    r.cause = f.cause;
    StartStreak(r.fail_since, f.at);
    AddCapped(r.partners, partner, kMaxPartners);
  }

  // True when the failure is settled (and must be dropped).
  bool Resolve(const Failure& f, std::vector<std::string>& blamed) {
    bool blame_a = Blamed(h_, f.a), blame_b = Blamed(h_, f.b);
    if (blame_a || blame_b) {  // 3a
      if (blame_a) AddCapped(h_.nodes[f.a].partners, f.b, kMaxPartners);
      if (blame_b) AddCapped(h_.nodes[f.b].partners, f.a, kMaxPartners);
      return true;
    }
    bool new_a = Blames(f.a, f.b, f), new_b = Blames(f.b, f.a, f);
    if (new_a || new_b) {  // 3b
      if (new_a) Blame(f.a, f.b, f, blamed);
      if (new_b) Blame(f.b, f.a, f, blamed);
      return true;
    }
    if (!Exonerated(h_, f.a, f.at) || !Exonerated(h_, f.b, f.at)) return false;
    if (f.block_a != f.block_b && !PathOk(f)) {  // 3c
      BlockPairRecord& r = h_.block_pairs[Key(f.block_a, f.block_b)];
      r.blamed = true;
      r.cause = f.cause;
      StartStreak(r.fail_since, f.at);
      AddCapped(r.pairs, NodePair{f.a, f.b}, kMaxPairs);
    }
    return true;  // 3c or 3d
  }

  History& h_;
  TimePoint recent_;
  std::unordered_map<std::string, int> open_;
  std::vector<bool> settled_;
};

void PruneFailures(History& h, TimePoint now, std::chrono::seconds window) {
  TimePoint recent = now - window;
  std::erase_if(h.failures, [&](const Failure& f) { return f.at < recent; });
  if (h.failures.size() > kMaxFailures) {
    h.failures.erase(
        h.failures.begin(),
        h.failures.begin() + static_cast<std::ptrdiff_t>(h.failures.size() - kMaxFailures));
  }
}

// Validates and applies one result (rules 1 and 2, and 3's bookkeeping); `r` gets it normalised.
Status Apply(History& h, const PairResult& in, PairResult& r) {
  if (in.a.empty() || in.b.empty()) return Status::InvalidArgument("canary result without a node");
  if (in.a == in.b) return Status::InvalidArgument("canary result of " + in.a + " with itself");
  if (in.outcome != Outcome::kPass && in.cause.empty()) {
    return Status::InvalidArgument("canary failure of " + in.a + "/" + in.b + " without a cause");
  }
  if (in.outcome == Outcome::kNodeFault && in.node != in.a && in.node != in.b) {
    return Status::InvalidArgument("canary node fault on " + in.node + ", not in its pair");
  }
  r = in;
  if (r.b < r.a) {
    std::swap(r.a, r.b);
    std::swap(r.block_a, r.block_b);
  }
  bool cross = r.block_a != r.block_b;
  BlockPair bp = Key(r.block_a, r.block_b);
  switch (r.outcome) {
    case Outcome::kPass:
      for (const std::string* n : {&r.a, &r.b}) {
        NodeRecord& rec = h.nodes[*n];
        Pass(rec.last_pass, rec.fail_since, r.at);
        if (!rec.fail_since) rec = NodeRecord{rec.last_pass, {}, false, {}, {}};
      }
      if (cross) {
        BlockPairRecord& rec = h.block_pairs[bp];
        Pass(rec.last_pass, rec.fail_since, r.at);
        if (!rec.fail_since) rec = BlockPairRecord{rec.last_pass, {}, false, {}, {}};
      }
      break;
    case Outcome::kNodeFault: {
      NodeRecord& rec = h.nodes[r.node];
      rec.blamed = true;
      rec.cause = r.cause;
      StartStreak(rec.fail_since, r.at);
      AddCapped(rec.partners, r.node == r.a ? r.b : r.a, kMaxPartners);
      break;
    }
    case Outcome::kPairFault: {
      StartStreak(h.nodes[r.a].fail_since, r.at);
      StartStreak(h.nodes[r.b].fail_since, r.at);
      if (cross) {
        StartStreak(h.block_pairs[bp].fail_since, r.at);
      }
      Failure f{r.a, r.b, r.block_a, r.block_b, r.cause, r.at};
      auto pos = std::upper_bound(h.failures.begin(), h.failures.end(), r.at,
                                  [](TimePoint t, const Failure& x) { return t < x.at; });
      h.failures.insert(pos, std::move(f));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace

Status Record(History& h, const PairResult& result, std::chrono::seconds window) {
  PairResult r;
  TOCSIN_RETURN_IF_ERROR(Apply(h, result, r));
  PruneFailures(h, r.at, window);
  std::optional<BlockPair> bp;
  if (r.block_a != r.block_b) bp = Key(r.block_a, r.block_b);
  Resolver(h, r.at, window).Run({r.a, r.b}, bp);
  return Status::Ok();
}

Status RecordRound(History& h, const std::vector<PairResult>& results,
                   std::chrono::seconds window) {
  Status first_error;
  size_t rejected = 0;
  std::optional<TimePoint> newest;
  for (const PairResult& result : results) {
    PairResult r;
    Status s = Apply(h, result, r);
    if (!s.ok()) {
      if (rejected++ == 0) first_error = s;
      continue;
    }
    if (!newest || r.at > *newest) newest = r.at;
  }
  if (newest) {
    PruneFailures(h, *newest, window);
    Resolver(h, *newest, window).Run({}, std::nullopt, /*all=*/true);
  }
  if (rejected == 0) return Status::Ok();
  return first_error.WithPrefix(fmt::format("{} of {} results rejected", rejected, results.size()));
}

void PruneStale(History& h, TimePoint now, std::chrono::seconds window) {
  PruneFailures(h, now, window);
  TimePoint recent = now - window, stale = now - kStaleWindows * window;
  std::set<std::string> failing;
  for (const Failure& f : h.failures) failing.insert({f.a, f.b});
  std::erase_if(h.nodes, [&](const auto& kv) {
    const NodeRecord& r = kv.second;
    return !r.blamed && !failing.contains(kv.first) && (!r.last_pass || *r.last_pass < stale) &&
           (!r.fail_since || *r.fail_since < recent);
  });
  std::set<BlockPair> failing_blocks;
  for (const Failure& f : h.failures) {
    if (f.block_a != f.block_b) failing_blocks.insert(Key(f.block_a, f.block_b));
  }
  std::erase_if(h.block_pairs, [&](const auto& kv) {
    const BlockPairRecord& r = kv.second;
    return !r.blamed && !failing_blocks.contains(kv.first) &&
           (!r.last_pass || *r.last_pass < stale) && (!r.fail_since || *r.fail_since < recent);
  });
}

Verdicts Attribute(const std::vector<NodeInfo>& all, const History& h, TimePoint now) {
  std::set<std::string> names, blocks;
  for (const NodeInfo& n : all) {
    names.insert(n.name);
    blocks.insert(n.block);
  }
  Verdicts v;
  for (const auto& [name, r] : h.nodes) {  // std::map: by name
    if (!r.blamed || !names.contains(name)) continue;
    v.nodes.push_back({name, r.cause, r.fail_since.value_or(TimePoint{}), r.partners});
  }
  for (const auto& [key, r] : h.block_pairs) {
    if (!r.blamed || !blocks.contains(key.first) || !blocks.contains(key.second)) continue;
    v.block_pairs.push_back(
        {key.first, key.second, r.cause, r.fail_since.value_or(TimePoint{}), r.pairs});
  }
  for (const Failure& f : h.failures) {  // oldest first
    if (f.at <= now) v.suspects.push_back({f.a, f.b, f.cause, f.at});
  }
  return v;
}

namespace {
double Ratio(size_t passed, size_t total) {
  return total == 0 ? 1.0 : static_cast<double>(passed) / static_cast<double>(total);
}
}  // namespace

double Coverage::node_ratio() const { return Ratio(nodes_passed, nodes_total); }
double Coverage::block_pair_ratio() const { return Ratio(block_pairs_passed, block_pairs_total); }

Coverage ComputeCoverage(const std::vector<NodeInfo>& all, const History& h, TimePoint now,
                         std::chrono::seconds window) {
  TimePoint recent = now - window;
  auto within = [&](const std::optional<TimePoint>& t) { return t && *t >= recent && *t <= now; };
  std::set<std::string> names, blocks;
  for (const NodeInfo& n : all) {
    names.insert(n.name);
    blocks.insert(n.block);
  }
  Coverage c;
  c.nodes_total = names.size();
  for (const std::string& n : names) {
    auto it = h.nodes.find(n);
    if (it != h.nodes.end() && within(it->second.last_pass)) ++c.nodes_passed;
  }
  c.block_pairs_total = blocks.size() * (blocks.size() - (blocks.empty() ? 0 : 1)) / 2;
  for (const auto& [key, r] : h.block_pairs) {
    if (blocks.contains(key.first) && blocks.contains(key.second) && within(r.last_pass)) {
      ++c.block_pairs_passed;
    }
  }
  return c;
}

std::optional<TimePoint> LastPass(const History& h, const std::string& node) {
  auto it = h.nodes.find(node);
  if (it == h.nodes.end()) return std::nullopt;
  return it->second.last_pass;
}

}  // namespace tocsin::canary
