#pragma once
// The summary of a finished run: rank 0's trainer writes it as JSON (--summary-json), the
// launcher leaves it as the worker-0 container's termination message, and the operator folds it
// into the TrainingJob's final status.progress. Its keys live here so that writer and reader
// cannot drift apart (a renamed key would otherwise drop silently out of the status).
//
// {"epochs": 5, "steps": 1175, "finalTrainLoss": 0.31, "testAccuracy": 0.886,
//  "samplesPerSecond": 54572, ..., "allreduce": {"busBandwidthBytesPerSecond": 1.2e9, ...}}

namespace ringmaster::contract::trainer_summary {

inline constexpr char kEpochs[] = "epochs";
inline constexpr char kSteps[] = "steps";
inline constexpr char kResumedFromStep[] = "resumedFromStep";
inline constexpr char kSamplesPerSecond[] = "samplesPerSecond";
inline constexpr char kSteadySamplesPerSecond[] = "steadySamplesPerSecond";
inline constexpr char kDevice[] = "device";
inline constexpr char kPrecision[] = "precision";
inline constexpr char kFinalTrainLoss[] = "finalTrainLoss";
inline constexpr char kTestAccuracy[] = "testAccuracy";
inline constexpr char kTestLoss[] = "testLoss";
inline constexpr char kWorldSize[] = "worldSize";
inline constexpr char kBackend[] = "backend";
inline constexpr char kModel[] = "model";
inline constexpr char kTrainSeconds[] = "trainSeconds";

// The "allreduce" object and its keys.
inline constexpr char kAllreduce[] = "allreduce";
inline constexpr char kAllreduceCalls[] = "calls";
inline constexpr char kAllreduceBytes[] = "bytes";
inline constexpr char kAllreduceSeconds[] = "seconds";
inline constexpr char kAllreduceBusBandwidth[] = "busBandwidthBytesPerSecond";
inline constexpr char kAllreduceHiddenSeconds[] = "hiddenSeconds";
inline constexpr char kAllreduceExposedSeconds[] = "exposedSeconds";
inline constexpr char kAllreduceOverlapRatio[] = "overlapRatio";

// The "autotune" object (present when the run tuned or took a checkpoint's choice): the chosen
// value of every knob it tuned under the knob's name ("bucketCapMB" and "firstBucketCapMB", or
// "microBatches"), and these keys.
inline constexpr char kAutotune[] = "autotune";
inline constexpr char kAutotuneSamples[] = "samples";
inline constexpr char kAutotuneDefaultStepSeconds[] = "defaultStepSeconds";
inline constexpr char kAutotuneBestStepSeconds[] = "bestStepSeconds";
inline constexpr char kAutotuneFromCheckpoint[] = "fromCheckpoint";

// The "pbt" object of a population-based training member: its name, the values it ended on, its
// lineage (one object per exploit: round, step, source, sourceObjective, objective, parameters)
// and the seconds its rounds took.
inline constexpr char kPbt[] = "pbt";
inline constexpr char kPbtMember[] = "member";
inline constexpr char kPbtParameters[] = "parameters";
inline constexpr char kPbtLineage[] = "lineage";
inline constexpr char kPbtRound[] = "round";
inline constexpr char kPbtStep[] = "step";
inline constexpr char kPbtSource[] = "source";
inline constexpr char kPbtSourceObjective[] = "sourceObjective";
inline constexpr char kPbtObjective[] = "objective";
inline constexpr char kPbtRoundSeconds[] = "roundSeconds";

}  // namespace ringmaster::contract::trainer_summary
