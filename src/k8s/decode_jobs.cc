// Decoders for the pod templates of training jobs' top objects: batch Job, JobSet, Kubeflow
// PyTorchJob and MPIJob, TrainJob (docs/FORMATS.md, "Training operators").
#include <algorithm>

#include "k8s/json_fields.h"

namespace tocsin::k8s::internal {
namespace {

// Counts from hostile input: 0 below, a million above (no job runs more pods in one set).
int64_t Clamp(int64_t n) { return std::clamp<int64_t>(n, 0, 1000000); }

// A PodTemplateSpec: {metadata, spec}.
Err DecodeTemplate(od::value v, PodSet& set) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "metadata") {
      Metadata meta;
      meta.all_labels = false;
      Err e = DecodeMetadata(f, meta);
      for (auto& [key, value] : meta.labels) set.pod.labels[key] = value;
      for (auto& [key, value] : meta.annotations) set.pod.annotations[key] = value;
      return e;
    }
    if (k == "spec") return DecodePod(f, "spec", set.pod);
    return {};
  });
}

// A batch JobSpec: parallelism (default 1) and the pod template.
Err DecodeJobSpec(od::value v, PodSet& set, int64_t& parallelism) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "parallelism") return Int(f, parallelism);
    if (k == "template") return DecodeTemplate(f, set);
    return {};
  });
}

// JobSet's spec.replicatedJobs[]: {name, replicas (default 1), template: {metadata, spec: JobSpec}}.
Err DecodeReplicatedJob(od::value v, std::vector<PodSet>& out) {
  PodSet set;
  int64_t replicas = 1, parallelism = 1;
  StringMap job_annotations;
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, set.role);
    if (k == "replicas") return Int(f, replicas);
    if (k != "template") return {};
    return Fields(f, [&](std::string_view tk, od::value tv) -> Err {
      if (tk == "metadata") {
        return Fields(tv, [&](std::string_view mk, od::value mv) -> Err {
          return mk == "annotations" ? Map(mv, job_annotations, IsTopologyAnnotation) : Err{};
        });
      }
      return tk == "spec" ? DecodeJobSpec(tv, set, parallelism) : Err{};
    });
  });
  if (e) return e;
  for (auto& [k, value] : job_annotations) set.pod.annotations.emplace(k, value);
  set.count = Clamp(replicas) * Clamp(parallelism);
  out.push_back(std::move(set));
  return {};
}

// Kubeflow's replica specs: {ROLE: {replicas (default 1), template}}. An MPIJob's Launcher gets
// mpi-operator's launcher label, which the audit reads.
Err DecodeReplicaSpecs(od::value v, const std::string& kind, std::vector<PodSet>& out) {
  return Fields(v, [&](std::string_view role, od::value spec) -> Err {
    PodSet set;
    set.role = std::string(role);
    Err e = Fields(spec, [&](std::string_view k, od::value f) -> Err {
      if (k == "replicas") return Int(f, set.count);
      if (k == "template") return DecodeTemplate(f, set);
      return {};
    });
    if (e) return e;
    if (kind == "MPIJob" && role == "Launcher") {
      set.pod.labels["training.kubeflow.org/job-role"] = "launcher";
    }
    out.push_back(std::move(set));
    return {};
  });
}

// TrainJob's spec.trainer: numNodes, resourcesPerNode and env of the runtime's trainer container.
Err DecodeTrainer(od::value v, std::vector<PodSet>& out) {
  PodSet set;
  set.role = "trainer";
  set.partial = true;
  Container c;
  c.name = "trainer";
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "numNodes") return Int(f, set.count);
    if (k == "env") return DecodeEnv(f, c.env);
    if (k != "resourcesPerNode") return {};
    return Fields(f, [&](std::string_view rk, od::value rv) -> Err {
      if (rk == "requests") return Map(rv, c.requests, ExtendedResource);
      if (rk == "limits") return Map(rv, c.limits, ExtendedResource);
      return {};
    });
  });
  if (e) return e;
  set.pod.containers.push_back(std::move(c));
  out.push_back(std::move(set));
  return {};
}

}  // namespace

Err DecodeJobSection(od::value v, std::string_view section, const std::string& kind,
                     ObjectRef& job) {
  if (section == "status") {
    return Fields(v, [&](std::string_view k, od::value f) -> Err {
      if (k != "conditions") return {};
      return Each(f, [&](od::value c) -> Err {
        std::string type, status;
        Err e = Fields(c, [&](std::string_view ck, od::value cv) -> Err {
          if (ck == "type") return String(cv, type);
          if (ck == "status") return String(cv, status);
          return {};
        });
        if (status == "True" &&
            (type == "Complete" || type == "Succeeded" || type == "Failed" || type == "Completed")) {
          job.finished = true;
        }
        return e;
      });
    });
  }
  Err e = Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (kind == "Job") {
      if (k == "parallelism") {
        if (job.pod_sets.empty()) job.pod_sets.emplace_back();
        return Int(f, job.pod_sets.front().count);
      }
      if (k == "template") {
        if (job.pod_sets.empty()) job.pod_sets.emplace_back();
        return DecodeTemplate(f, job.pod_sets.front());
      }
    }
    if (kind == "JobSet" && k == "replicatedJobs") {
      return Each(f, [&](od::value r) { return DecodeReplicatedJob(r, job.pod_sets); });
    }
    if ((kind == "PyTorchJob" && k == "pytorchReplicaSpecs") ||
        (kind == "MPIJob" && k == "mpiReplicaSpecs")) {
      return DecodeReplicaSpecs(f, kind, job.pod_sets);
    }
    if (kind == "TrainJob" && k == "trainer") return DecodeTrainer(f, job.pod_sets);
    return {};
  });
  for (auto& set : job.pod_sets) set.count = Clamp(set.count);
  return e;
}

}  // namespace tocsin::k8s::internal
