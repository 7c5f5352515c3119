#include "canary/planner.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace tocsin::canary {
namespace {

// Block pairs considered by rule 3 at most: the first this many blocks (in the seeded order)
// that still have nodes; beyond, their pairs wait for later rounds.
constexpr size_t kMaxRule3Blocks = 2048;

struct Cand {
  std::string name;
  size_t block = 0;
  std::optional<TimePoint> last_pass;
  bool recent = false;
  bool suspected = false;
  bool blamed = false;
  bool used = false;
  uint64_t rank = 0;                // seeded tie-breaker
  std::optional<TimePoint> failed;  // suspected: the oldest failure not exonerated
};

uint64_t PairKey(size_t x, size_t y) {
  if (y < x) std::swap(x, y);
  return (static_cast<uint64_t>(x) << 32) | static_cast<uint64_t>(y);
}

// Never passed first, then oldest pass first, then the seeded rank.
bool OlderPass(const Cand& x, const Cand& y) {
  return std::tuple(x.last_pass.has_value(), x.last_pass.value_or(TimePoint{}), x.rank) <
         std::tuple(y.last_pass.has_value(), y.last_pass.value_or(TimePoint{}), y.rank);
}

// A forward-only scan over a list of candidate indices: what it skips it never needs again,
// because "used" only grows and the filters do not change during a plan.
struct Cursor {
  const std::vector<size_t>* list = nullptr;
  size_t pos = 0;
  template <typename Pred>
  std::optional<size_t> Next(const std::vector<Cand>& c, Pred ok) {
    while (pos < list->size() && (c[(*list)[pos]].used || !ok(c[(*list)[pos]]))) ++pos;
    if (pos == list->size()) return std::nullopt;
    return (*list)[pos];
  }
};

class Planner {
 public:
  Planner(const std::vector<NodeInfo>& eligible, const std::vector<NodeInfo>& all, const History& h,
          const PlanOptions& o)
      : h_(h), o_(o), rng_(o.seed) {
    for (const NodeInfo& n : all) BlockId(n.block);
    std::unordered_set<std::string> seen;
    for (const NodeInfo& n : eligible) {
      if (n.name.empty() || !seen.insert(n.name).second) continue;
      Cand c;
      c.name = n.name;
      c.block = BlockId(n.block);
      c_.push_back(std::move(c));
    }
    budget_ = std::min(o.max_nodes, c_.size()) / 2;
    Annotate();
  }

  std::vector<PlannedPair> Run() {
    Retests();
    Unpassed();
    BlockPairs();
    IntraBlock();
    return std::move(out_);
  }

 private:
  size_t BlockId(const std::string& block) {
    auto [it, added] = block_ids_.try_emplace(block, block_ids_.size());
    return it->second;
  }

  bool Full() const { return out_.size() >= budget_; }

  void Annotate() {
    TimePoint recent = o_.now - o_.window;
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < c_.size(); ++i) index.emplace(c_[i].name, i);
    std::vector<uint64_t> ranks(c_.size());
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng_);
    for (size_t i = 0; i < c_.size(); ++i) {
      Cand& c = c_[i];
      c.rank = ranks[i];
      auto it = h_.nodes.find(c.name);
      if (it == h_.nodes.end()) continue;
      c.last_pass = it->second.last_pass;
      c.recent = c.last_pass && *c.last_pass >= recent;
      c.blamed = it->second.blamed;
    }
    for (const Failure& f : h_.failures) {
      if (f.at < recent) continue;
      for (const std::string* n : {&f.a, &f.b}) {
        auto it = index.find(*n);
        if (it == index.end()) continue;
        Cand& c = c_[it->second];
        if (c.blamed || (c.last_pass && *c.last_pass >= f.at)) continue;
        c.suspected = true;
        if (!c.failed || f.at < *c.failed) c.failed = f.at;
      }
    }
    block_rank_.resize(block_ids_.size());
    std::iota(block_rank_.begin(), block_rank_.end(), 0);
    std::shuffle(block_rank_.begin(), block_rank_.end(), rng_);
    for (const auto& [key, r] : h_.block_pairs) {
      auto x = block_ids_.find(key.first), y = block_ids_.find(key.second);
      if (x == block_ids_.end() || y == block_ids_.end() || !r.last_pass) continue;
      block_pass_[PairKey(x->second, y->second)] = *r.last_pass;
    }
    // Per block: without a recent pass first, then oldest pass, then seeded.
    members_.resize(block_ids_.size());
    remaining_.assign(block_ids_.size(), 0);
    all_.resize(c_.size());
    std::iota(all_.begin(), all_.end(), 0);
    std::sort(all_.begin(), all_.end(), [&](size_t x, size_t y) {
      if (c_[x].recent != c_[y].recent) return !c_[x].recent;
      return OlderPass(c_[x], c_[y]);
    });
    for (size_t i : all_) {
      members_[c_[i].block].push_back(i);
      ++remaining_[c_[i].block];
    }
    block_cursor_.resize(members_.size());
    for (size_t b = 0; b < members_.size(); ++b) block_cursor_[b].list = &members_[b];
  }

  bool Covered(size_t x, size_t y) const {
    uint64_t key = PairKey(x, y);
    if (planned_.contains(key)) return true;
    auto it = block_pass_.find(key);
    return it != block_pass_.end() && it->second >= o_.now - o_.window;
  }

  void Emit(size_t i, size_t j, const char* why) {
    Cand &x = c_[i], &y = c_[j];
    x.used = y.used = true;
    --remaining_[x.block];
    --remaining_[y.block];
    if (x.block != y.block) planned_.insert(PairKey(x.block, y.block));
    out_.push_back(x.name < y.name ? PlannedPair{x.name, y.name, why}
                                   : PlannedPair{y.name, x.name, why});
  }

  static bool GoodNode(const Cand& c) { return c.recent && !c.suspected && !c.blamed; }
  static bool Clean(const Cand& c) { return !c.suspected && !c.blamed; }

  // Rule 1.
  void Retests() {
    std::vector<size_t> order;
    for (size_t i = 0; i < c_.size(); ++i) {
      if (c_[i].suspected || c_[i].blamed) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      const Cand &a = c_[x], &b = c_[y];
      return std::tuple(!a.suspected, a.failed.value_or(TimePoint{}), a.rank) <
             std::tuple(!b.suspected, b.failed.value_or(TimePoint{}), b.rank);
    });
    std::vector<Cursor> good(members_.size());
    for (size_t b = 0; b < members_.size(); ++b) good[b].list = &members_[b];
    Cursor any_good{&all_}, any_clean{&all_};
    for (size_t s : order) {
      if (Full()) return;
      if (c_[s].used) continue;
      std::optional<size_t> p = good[c_[s].block].Next(c_, GoodNode);
      if (!p) p = any_good.Next(c_, GoodNode);
      if (!p) p = any_clean.Next(c_, Clean);
      if (p) Emit(s, *p, "retest");
    }
  }

  // Rule 2.
  void Unpassed() {
    std::vector<size_t> order;
    for (size_t i = 0; i < c_.size(); ++i) {
      if (!c_[i].recent && !c_[i].used) order.push_back(i);
    }
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return OlderPass(c_[x], c_[y]); });
    std::vector<size_t> blocks(members_.size());
    std::iota(blocks.begin(), blocks.end(), 0);
    std::sort(blocks.begin(), blocks.end(),
              [&](size_t x, size_t y) { return block_rank_[x] < block_rank_[y]; });
    Cursor same_list{&order}, any{&all_};
    for (size_t x : order) {
      if (Full()) return;
      if (c_[x].used) continue;
      size_t home = c_[x].block;
      std::optional<size_t> best;
      for (size_t b : blocks) {
        if (b == home || remaining_[b] == 0 || Covered(home, b)) continue;
        if (!best || remaining_[b] > remaining_[*best]) best = b;
      }
      std::optional<size_t> p;
      auto other = [&](const Cand& c) { return &c != &c_[x]; };
      if (best) p = block_cursor_[*best].Next(c_, other);
      if (!p) p = same_list.Next(c_, other);
      if (!p) p = any.Next(c_, other);
      if (p) Emit(x, *p, "node");
    }
  }

  // Rule 3.
  void BlockPairs() {
    if (Full()) return;
    std::vector<size_t> open;
    for (size_t b = 0; b < members_.size(); ++b) {
      if (remaining_[b] > 0) open.push_back(b);
    }
    std::sort(open.begin(), open.end(),
              [&](size_t x, size_t y) { return block_rank_[x] < block_rank_[y]; });
    if (open.size() > kMaxRule3Blocks) open.resize(kMaxRule3Blocks);
    struct Todo {
      bool passed;
      TimePoint last;
      uint64_t tie;
      size_t x, y;
    };
    std::vector<Todo> todo;
    for (size_t i = 0; i < open.size(); ++i) {
      for (size_t j = i + 1; j < open.size(); ++j) {
        if (Covered(open[i], open[j])) continue;
        auto it = block_pass_.find(PairKey(open[i], open[j]));
        bool passed = it != block_pass_.end();
        todo.push_back({passed, passed ? it->second : TimePoint{}, rng_(), open[i], open[j]});
      }
    }
    std::sort(todo.begin(), todo.end(), [](const Todo& a, const Todo& b) {
      return std::tie(a.passed, a.last, a.tie) < std::tie(b.passed, b.last, b.tie);
    });
    auto any = [](const Cand&) { return true; };
    for (const Todo& t : todo) {
      if (Full()) return;
      if (remaining_[t.x] == 0 || remaining_[t.y] == 0) continue;
      std::optional<size_t> p = block_cursor_[t.x].Next(c_, any);
      std::optional<size_t> q = block_cursor_[t.y].Next(c_, any);
      if (p && q) Emit(*p, *q, "block-pair");
    }
  }

  // Rule 4.
  void IntraBlock() {
    std::vector<size_t> blocks(members_.size());
    std::iota(blocks.begin(), blocks.end(), 0);
    std::sort(blocks.begin(), blocks.end(),
              [&](size_t x, size_t y) { return block_rank_[x] < block_rank_[y]; });
    auto any = [](const Cand&) { return true; };
    for (size_t b : blocks) {
      while (!Full() && remaining_[b] >= 2) {
        std::optional<size_t> p = block_cursor_[b].Next(c_, any);
        if (!p) break;
        c_[*p].used = true;  // so that Next finds the second one
        std::optional<size_t> q = block_cursor_[b].Next(c_, any);
        c_[*p].used = false;
        if (!q) break;
        Emit(*p, *q, "intra-block");
      }
    }
  }

  const History& h_;
  const PlanOptions& o_;
  std::mt19937_64 rng_;
  std::vector<Cand> c_;
  size_t budget_ = 0;  // pairs
  std::unordered_map<std::string, size_t> block_ids_;
  std::vector<size_t> block_rank_;
  std::unordered_map<uint64_t, TimePoint> block_pass_;
  std::unordered_set<uint64_t> planned_;
  std::vector<std::vector<size_t>> members_;
  std::vector<size_t> remaining_;
  std::vector<Cursor> block_cursor_;
  std::vector<size_t> all_;
  std::vector<PlannedPair> out_;
};

}  // namespace

std::vector<PlannedPair> Plan(const std::vector<NodeInfo>& eligible,
                              const std::vector<NodeInfo>& all, const History& history,
                              const PlanOptions& options) {
  return Planner(eligible, all, history, options).Run();
}

}  // namespace tocsin::canary
