#pragma once

// Internal to src/drift: the recorder of compared items and findings the comparisons share.

#include <set>
#include <string>

#include "drift/drift.h"

namespace tocsin::drift::internal {

inline constexpr char kAbsent[] = "(absent)";

class Differ {
 public:
  Differ(const Side& a, const Side& b, DiffResult& out) : a_(a), b_(b), out_(out) {}

  const Side& a() const { return a_; }
  const Side& b() const { return b_; }

  // Records a compared item; true when its two values differ.
  bool Compare(Group group, const std::string& name, const std::string& a, const std::string& b);
  // A finding about item `subject`, its evidence the two values and both sources plus `extra`.
  void Add(const char* check, Severity severity, Group group, const std::string& subject,
           std::string message, const std::string& a, const std::string& b,
           nlohmann::json extra = nlohmann::json::object());
  // A finding about one side only (a class's outliers, an input that lacks a kind).
  void AddOneSide(const char* check, Severity severity, Group group, const std::string& subject,
                  std::string message, const Side& side, nlohmann::json extra);

  // "A (staging.json)": a side named by its letter too (both sides may have one name).
  std::string Label(const Side& side) const;
  // The name of the side that lacks something: a when `a_lacks`, else b.
  const std::string& Lacking(bool a_lacks) const { return a_lacks ? a_.name : b_.name; }

 private:
  void Push(const char* check, Severity severity, const std::string& subject, std::string message,
            nlohmann::json evidence);

  const Side& a_;
  const Side& b_;
  DiffResult& out_;
};

// Calls fn(key, a's value or nullptr, b's value or nullptr) for every key of either map, in
// order: how every comparison matches the two sides' objects.
template <typename MapA, typename MapB, typename Fn>
void EachKey(const MapA& a, const MapB& b, Fn fn) {
  std::set<typename MapA::key_type> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  for (const auto& k : keys) {
    auto ia = a.find(k);
    auto ib = b.find(k);
    fn(k, ia == a.end() ? nullptr : &ia->second, ib == b.end() ? nullptr : &ib->second);
  }
}

// The comparisons, one per group (facts.cc, plugins.cc, networks.cc, templates.cc).
void CompareNodes(Differ& d, const Options& options, const audit::Options& a_options,
                  const audit::Options& b_options);
void ComparePlugins(Differ& d, const audit::Options& a_options, const audit::Options& b_options);
void CompareNetworks(Differ& d);
void CompareTemplates(Differ& d);

// The part of a version before its first `sep` ("550.54.15" -> "550", "24.10-0.7.0" -> "24.10").
std::string Major(const std::string& version, char sep);

}  // namespace tocsin::drift::internal
