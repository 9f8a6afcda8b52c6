#include "ringmaster/kube/experiment.h"

#include "ringmaster/kube/detail/object_codec.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitObjectiveSpec(V& v, S& s) {
  v("metric", s.metric);
  v("goal", s.goal);
  v("target", s.target);
}

template <class V, class S>
void visitPbtSearchSpec(V& v, S& s) {
  v("directory", s.directory);
  v("quantile", s.quantile);
  v("resampleProbability", s.resample_probability);
  v("waitSeconds", s.wait_seconds);
  v("intervals", s.intervals);
}

template <class V, class S>
void visitTrialTemplate(V& v, S& s) {
  v("spec", s.spec);
}

template <class V, class S>
void visitExperimentSpec(V& v, S& s) {
  v("algorithm", s.algorithm);
  v("seed", s.seed);
  v("objective", s.objective);
  v("parameters", s.parameters);
  v("maxTrials", s.max_trials);
  v("parallelism", s.parallelism);
  v("maxFailedTrials", s.max_failed_trials);
  v("trialTemplate", s.trial_template);
  v("pbt", s.pbt);
}

template <class V, class S>
void visitTrialResult(V& v, S& s) {
  v("name", s.name);
  v("index", s.index);
  v("parameters", s.parameters);
  v("objective", s.objective);
  v("lineage", s.lineage);
}

template <class V, class S>
void visitExperimentStatus(V& v, S& s) {
  v("conditions", s.conditions);
  v("phase", s.phase);
  v("reason", s.reason);
  v("trials", s.trials);
  v("trialsCreated", s.trials_created);
  v("trialsRunning", s.trials_running);
  v("trialsSucceeded", s.trials_succeeded);
  v("trialsFailed", s.trials_failed);
  v("progress", s.progress);
  v("bestTrial", s.best_trial);
  v("startTime", s.start_time);
  v("completionTime", s.completion_time);
  v("observedGeneration", s.observed_generation);
}

template <class V, class S>
void visitExperiment(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(ObjectiveSpec, visitObjectiveSpec)
RM_KUBE_DEFINE_CODEC(PbtSearchSpec, visitPbtSearchSpec)
RM_KUBE_DEFINE_CODEC(TrialTemplate, visitTrialTemplate)
RM_KUBE_DEFINE_CODEC(ExperimentSpec, visitExperimentSpec)
RM_KUBE_DEFINE_CODEC(TrialResult, visitTrialResult)
RM_KUBE_DEFINE_CODEC(ExperimentStatus, visitExperimentStatus)
RM_KUBE_DEFINE_CODEC(Experiment, visitExperiment)

}  // namespace ringmaster::kube
