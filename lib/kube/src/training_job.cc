#include "ringmaster/kube/training_job.h"

namespace ringmaster::kube {
namespace {

template <class V, class S>
void visitModelSpec(V& v, S& s) {
  v("type", s.type);
  v("hidden", s.hidden);
  v("channels", s.channels);
  v("cnnHidden", s.cnn_hidden);
}

template <class V, class S>
void visitDatasetSpec(V& v, S& s) {
  v("name", s.name);
  v("path", s.path);
}

template <class V, class S>
void visitOptimizerSpec(V& v, S& s) {
  v("type", s.type);
  v("learningRate", s.learning_rate);
  v("momentum", s.momentum);
  v("weightDecay", s.weight_decay);
  v("schedule", s.schedule);
  v("nesterov", s.nesterov);
  v("beta1", s.beta1);
  v("beta2", s.beta2);
  v("epsilon", s.epsilon);
}

template <class V, class S>
void visitCheckpointSpec(V& v, S& s) {
  v("path", s.path);
  v("everySteps", s.every_steps);
  v("keep", s.keep);
}

template <class V, class S>
void visitPipelineSpec(V& v, S& s) {
  v("stages", s.stages);
  v("microBatches", s.micro_batches);
  v("schedule", s.schedule);
  v("partition", s.partition);
}

template <class V, class S>
void visitParameterServerSpec(V& v, S& s) {
  v("servers", s.servers);
  v("consistency", s.consistency);
  v("staleness", s.staleness);
}

template <class V, class S>
void visitParallelismSpec(V& v, S& s) {
  v("tensor", s.tensor);
  v("pipeline", s.pipeline);
  v("parameterServer", s.parameter_server);
}

template <class V, class S>
void visitAutotuneSpec(V& v, S& s) {
  v("maxSamples", s.max_samples);
  v("warmupSteps", s.warmup_steps);
  v("measureSteps", s.measure_steps);
  v("bucketCapMB", s.bucket_cap_mb);
  v("firstBucketCapMB", s.first_bucket_cap_mb);
  v("microBatches", s.micro_batches);
  v("blasThreads", s.blas_threads);
  v("tcpDoublingMaxKB", s.tcp_doubling_max_kb);
  v("log", s.log);
  v("retune", s.retune);
}

template <class V, class S>
void visitSearchParameterSpec(V& v, S& s) {
  v("path", s.path);
  v("min", s.min);
  v("max", s.max);
  v("scale", s.scale);
  v("integer", s.integer);
  v("choices", s.choices);
  v("gridPoints", s.grid_points);
}

template <class V, class S>
void visitPbtSpec(V& v, S& s) {
  v("directory", s.directory);
  v("member", s.member);
  v("population", s.population);
  v("parameters", s.parameters);
  v("seed", s.seed);
  v("quantile", s.quantile);
  v("resampleProbability", s.resample_probability);
  v("metric", s.metric);
  v("goal", s.goal);
  v("waitSeconds", s.wait_seconds);
  v("intervals", s.intervals);
}

template <class V, class S>
void visitTrainerSpec(V& v, S& s) {
  v("model", s.model);
  v("dataset", s.dataset);
  v("epochs", s.epochs);
  v("batchSize", s.batch_size);
  v("globalBatchSize", s.global_batch_size);
  v("optimizer", s.optimizer);
  v("bucketCapMB", s.bucket_cap_mb);
  v("firstBucketCapMB", s.first_bucket_cap_mb);
  v("tcpDoublingMaxKB", s.tcp_doubling_max_kb);
  v("checkpoint", s.checkpoint);
  v("seed", s.seed);
  v("maxSteps", s.max_steps);
  v("logEverySteps", s.log_every_steps);
  v("metricsPort", s.metrics_port);
  v("commTimeoutSeconds", s.comm_timeout_seconds);
  v("blasThreads", s.blas_threads);
  v("device", s.device);
  v("precision", s.precision);
  v("cudaGraph", s.cuda_graph);
  v("parallelism", s.parallelism);
  v("autotune", s.autotune);
  v("pbt", s.pbt);
}

template <class V, class S>
void visitSchedulingPolicy(V& v, S& s) {
  v("scheduleTimeoutSeconds", s.schedule_timeout_seconds);
  v("schedulerName", s.scheduler_name);
}

template <class V, class S>
void visitElasticPolicy(V& v, S& s) {
  v("minReplicas", s.min_replicas);
  v("maxReplicas", s.max_replicas);
}

template <class V, class S>
void visitRoleSpec(V& v, S& s) {
  v("replicas", s.replicas);
  v("resources", s.resources);
  v("template", s.pod_template);
}

template <class V, class S>
void visitRoles(V& v, S& s) {
  v("ps", s.ps);
  v("chief", s.chief);
  v("evaluator", s.evaluator);
}

template <class V, class S>
void visitTrainingJobSpec(V& v, S& s) {
  v("replicas", s.replicas);
  v("procsPerReplica", s.procs_per_replica);
  v("launcher", s.launcher);
  v("backend", s.backend);
  v("image", s.image);
  v("resources", s.resources);
  v("trainer", s.trainer);
  v("command", s.command);
  v("env", s.env);
  v("volumes", s.volumes);
  v("volumeMounts", s.volume_mounts);
  v("restartPolicy", s.restart_policy);
  v("backoffLimit", s.backoff_limit);
  v("activeDeadlineSeconds", s.active_deadline_seconds);
  v("finishTimeoutSeconds", s.finish_timeout_seconds);
  v("ttlSecondsAfterFinished", s.ttl_seconds_after_finished);
  v("cleanPodPolicy", s.clean_pod_policy);
  v("suspend", s.suspend);
  v("schedulingPolicy", s.scheduling_policy);
  v("elastic", s.elastic);
  v("roles", s.roles);
  v("managedBy", s.managed_by);
  v("template", s.pod_template);
}

template <class V, class S>
void visitReplicaStatus(V& v, S& s) {
  v("active", s.active);
  v("succeeded", s.succeeded);
  v("failed", s.failed);
  v("ready", s.ready);
}

template <class V, class S>
void visitRoleStatuses(V& v, S& s) {
  v("ps", s.ps);
  v("chief", s.chief);
  v("evaluator", s.evaluator);
}

template <class V, class S>
void visitPodReplacement(V& v, S& s) {
  v("pod", s.pod);
  v("uid", s.uid);
  v("time", s.time);
  v("reason", s.reason);
}

template <class V, class S>
void visitPbtExploit(V& v, S& s) {
  v("round", s.round);
  v("step", s.step);
  v("source", s.source);
  v("sourceObjective", s.source_objective);
  v("objective", s.objective);
  v("parameters", s.parameters);
}

template <class V, class S>
void visitPbtProgress(V& v, S& s) {
  v("member", s.member);
  v("parameters", s.parameters);
  v("lineage", s.lineage);
  v("roundSeconds", s.round_seconds);
}

template <class V, class S>
void visitTrainingProgress(V& v, S& s) {
  v("epoch", s.epoch);
  v("step", s.step);
  v("loss", s.loss);
  v("samplesPerSecond", s.samples_per_second);
  v("allreduceBusBandwidth", s.allreduce_bus_bandwidth);
  v("testAccuracy", s.test_accuracy);
  v("resumedFromStep", s.resumed_from_step);
  v("pbt", s.pbt);
}

template <class V, class S>
void visitTrainingJobStatus(V& v, S& s) {
  v("conditions", s.conditions);
  v("phase", s.phase);
  v("reason", s.reason);
  v("replicas", s.replicas);
  v("roles", s.roles);
  v("restarts", s.restarts);
  v("currentReplicas", s.current_replicas);
  v("selector", s.selector);
  v("worldSize", s.world_size);
  v("world", s.world);
  v("scheduleRetries", s.schedule_retries);
  v("replacedPods", s.replaced_pods);
  v("replacements", s.replacements);
  v("startTime", s.start_time);
  v("completionTime", s.completion_time);
  v("lastRestartTime", s.last_restart_time);
  v("progress", s.progress);
  v("observedGeneration", s.observed_generation);
}

template <class V, class S>
void visitTrainingJob(V& v, S& s) {
  v("apiVersion", s.api_version);
  v("kind", s.kind);
  v.required("metadata", s.metadata);
  v("spec", s.spec);
  v("status", s.status);
}

}  // namespace

RM_KUBE_DEFINE_CODEC(ModelSpec, visitModelSpec)
RM_KUBE_DEFINE_CODEC(DatasetSpec, visitDatasetSpec)
RM_KUBE_DEFINE_CODEC(OptimizerSpec, visitOptimizerSpec)
RM_KUBE_DEFINE_CODEC(CheckpointSpec, visitCheckpointSpec)
RM_KUBE_DEFINE_CODEC(PipelineSpec, visitPipelineSpec)
RM_KUBE_DEFINE_CODEC(ParameterServerSpec, visitParameterServerSpec)
RM_KUBE_DEFINE_CODEC(ParallelismSpec, visitParallelismSpec)
RM_KUBE_DEFINE_CODEC(AutotuneSpec, visitAutotuneSpec)
RM_KUBE_DEFINE_CODEC(SearchParameterSpec, visitSearchParameterSpec)
RM_KUBE_DEFINE_CODEC(PbtSpec, visitPbtSpec)
RM_KUBE_DEFINE_CODEC(TrainerSpec, visitTrainerSpec)
RM_KUBE_DEFINE_CODEC(SchedulingPolicy, visitSchedulingPolicy)
RM_KUBE_DEFINE_CODEC(ElasticPolicy, visitElasticPolicy)
RM_KUBE_DEFINE_CODEC(RoleSpec, visitRoleSpec)
RM_KUBE_DEFINE_CODEC(Roles, visitRoles)
RM_KUBE_DEFINE_CODEC(TrainingJobSpec, visitTrainingJobSpec)
RM_KUBE_DEFINE_CODEC(ReplicaStatus, visitReplicaStatus)
RM_KUBE_DEFINE_CODEC(RoleStatuses, visitRoleStatuses)
RM_KUBE_DEFINE_CODEC(PodReplacement, visitPodReplacement)
RM_KUBE_DEFINE_CODEC(PbtExploit, visitPbtExploit)
RM_KUBE_DEFINE_CODEC(PbtProgress, visitPbtProgress)
RM_KUBE_DEFINE_CODEC(TrainingProgress, visitTrainingProgress)
RM_KUBE_DEFINE_CODEC(TrainingJobStatus, visitTrainingJobStatus)
RM_KUBE_DEFINE_CODEC(TrainingJob, visitTrainingJob)

}  // namespace ringmaster::kube
