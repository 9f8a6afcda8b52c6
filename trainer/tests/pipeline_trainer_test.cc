// A pipeline-parallel run is the single-rank run cut into stages: the same parameters after two
// epochs (fp32 rounding apart), the same test figures, and a resume from per-stage checkpoints
// that lands where an uninterrupted run does, even when one stage wrote a step the others did
// not. Ranks are threads over inproc communicators; the data is synthetic.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "trainer/comm/inproc_communicator.h"
#include "trainer/tests/synthetic_data.h"
#include "trainer/trainer.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  std::vector<core::Result<TrainSummary>> summaries;
  std::vector<std::vector<float>> per_rank;
  std::vector<float> params;  // replica 0's stages', in stage order
};

class PipelineTrainer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-pipeline-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static TrainerConfig config(int stages, int micro, const std::string& schedule) {
    TrainerConfig c = defaultTrainerConfig();
    c.model.hidden = {32, 24};  // three layers
    c.epochs = 2;
    c.batch_size = 48;  // 512 samples: 10 full steps and a short one of 32 per epoch
    c.optimizer.learning_rate = 0.05;
    c.optimizer.momentum = 0.9;
    c.pipeline.stages = stages;
    c.pipeline.micro_batches = micro;
    c.pipeline.schedule = schedule;
    return c;
  }

  // `world` ranks as threads; with more ranks than stages, each stage's replicas get an inproc
  // group of their own through make_group.
  RunResult run(const TrainerConfig& c, int world) {
    auto group = std::make_shared<comm::InProcGroup>(world);
    std::vector<std::unique_ptr<comm::Communicator>> comms;
    for (int r = 0; r < world; ++r) {
      comms.push_back(std::make_unique<comm::InProcCommunicator>(group, r));
    }
    const int stages = c.pipeline.stages;
    std::vector<std::vector<std::unique_ptr<comm::Communicator>>> stage_groups;
    for (int s = 0; s < stages; ++s) {
      stage_groups.push_back(comm::makeInProcCommunicators(world / stages));
    }
    RunResult out;
    out.summaries.assign(world, core::internalError("not run"));
    out.per_rank.resize(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        TrainerContext ctx;
        ctx.comm = comms[r].get();
        ctx.train = &train_;
        ctx.test = &test_;
        ctx.make_group = [&, r](const std::string& name, int rank,
                                int size) -> core::Result<std::unique_ptr<comm::Communicator>> {
          EXPECT_EQ(name, "pipeline-stage-" + std::to_string(r % stages));
          EXPECT_EQ(size, world / stages);
          return std::move(stage_groups[r % stages][rank]);
        };
        Trainer t(c, ctx);
        out.summaries[r] = t.run();
        out.per_rank[r] = t.parameters();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < stages && r < world; ++r) {
      out.params.insert(out.params.end(), out.per_rank[r].begin(), out.per_rank[r].end());
    }
    return out;
  }

  static double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(double(b[i])));
    }
    return diff / scale;
  }

  void resumeAtTheCommonStep(int world, int64_t common);

  fs::path dir_;
  data::Dataset train_ = testing::syntheticSet(512, 1);
  data::Dataset test_ = testing::syntheticSet(300, 2);
};

TEST_F(PipelineTrainer, StagesTrainTheSameModelAsOneRank) {
  const RunResult one = run(config(1, 1, "1f1b"), 1);
  ASSERT_TRUE(one.summaries[0].ok()) << one.summaries[0].status().toString();
  for (auto [stages, micro, schedule] :
       {std::tuple{3, 4, "1f1b"}, std::tuple{2, 8, "gpipe"}, std::tuple{3, 1, "gpipe"}}) {
    SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(micro) + " micro-batches, " +
                 schedule);
    const RunResult piped = run(config(stages, micro, schedule), stages);
    for (const auto& s : piped.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_LE(relativeDifference(piped.params, one.params), 1e-5);
    const TrainSummary& a = *piped.summaries[0];
    const TrainSummary& b = *one.summaries[0];
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.epochs, 2);
    ASSERT_TRUE(a.test_accuracy && b.test_accuracy);
    EXPECT_NEAR(*a.test_accuracy, *b.test_accuracy, 1.0 / 300 + 1e-9);
    ASSERT_TRUE(a.final_train_loss && b.final_train_loss);
    EXPECT_NEAR(*a.final_train_loss, *b.final_train_loss, 1e-4);
    EXPECT_NE(a.model_signature.find("layers [0, "), std::string::npos) << a.model_signature;
  }
}

// D x S = 2 x 2: two replicas of a two-stage pipeline, batch b each, train what one rank does on
// their union (batch 2b), and the replicas stay identical.
TEST_F(PipelineTrainer, ReplicasOfAPipelineTrainAsOneRankOnTheirUnion) {
  TrainerConfig one_rank = config(1, 1, "1f1b");
  one_rank.batch_size = 96;
  const RunResult one = run(one_rank, 1);
  ASSERT_TRUE(one.summaries[0].ok()) << one.summaries[0].status().toString();
  const RunResult replicas = run(config(2, 4, "1f1b"), 4);
  for (const auto& s : replicas.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_LE(relativeDifference(replicas.params, one.params), 1e-5);
  EXPECT_EQ(replicas.per_rank[2], replicas.per_rank[0]) << "replica 1's stage 0 diverged";
  EXPECT_EQ(replicas.per_rank[3], replicas.per_rank[1]) << "replica 1's stage 1 diverged";
  const TrainSummary& a = *replicas.summaries[0];
  const TrainSummary& b = *one.summaries[0];
  EXPECT_EQ(a.steps, b.steps);
  ASSERT_TRUE(a.test_accuracy && b.test_accuracy);
  EXPECT_NEAR(*a.test_accuracy, *b.test_accuracy, 1.0 / 300 + 1e-9);
  EXPECT_GT(a.allreduce_calls, 0u) << "the replicas must have averaged their gradients";
}

TEST_F(PipelineTrainer, ResumesEveryStageAtTheNewestStepAllOfThemHold) {
  // Checkpoints every 4 steps and at the end of each epoch: one replica has 11 steps an epoch
  // (the last newest-before-7 is step 4), two have 6 (the end of epoch 1, step 6).
  for (auto [world, common] : {std::pair{2, 4}, std::pair{4, 6}}) {
    SCOPED_TRACE(std::to_string(world) + " ranks");
    fs::remove_all(dir_);
    resumeAtTheCommonStep(world, common);
  }
}

void PipelineTrainer::resumeAtTheCommonStep(int world, int64_t common) {
  const RunResult straight = run(config(2, 4, "1f1b"), world);
  for (const auto& s : straight.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();

  TrainerConfig c = config(2, 4, "1f1b");
  c.checkpoint.path = dir_.string();
  c.checkpoint.every_steps = 4;
  c.max_steps = 7;
  RunResult first = run(c, world);
  for (const auto& s : first.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  // Stage 1 "crashed" before writing step 7: both must go back to the step before.
  const fs::path stage1 = dir_ / "stage-1-of-2";
  ASSERT_TRUE(fs::exists(dir_ / "stage-0-of-2" / "ckpt-000000000007.rmck"));
  ASSERT_TRUE(fs::remove(stage1 / "ckpt-000000000007.rmck"));

  c.max_steps = 0;
  const RunResult resumed = run(c, world);
  for (const auto& s : resumed.summaries) {
    ASSERT_TRUE(s.ok()) << s.status().toString();
    EXPECT_EQ(s->resumed_from_step, common);
    EXPECT_EQ(s->steps, straight.summaries[0]->steps);
  }
  EXPECT_EQ(resumed.per_rank, straight.per_rank)
      << "a resumed pipeline must land where one run does";
}

TEST_F(PipelineTrainer, AStageWithoutCheckpointsBesideOneWithThemIsAnError) {
  TrainerConfig c = config(2, 4, "1f1b");
  c.checkpoint.path = dir_.string();
  c.max_steps = 3;
  RunResult first = run(c, 2);
  for (const auto& s : first.summaries) ASSERT_TRUE(s.ok()) << s.status().toString();
  fs::remove_all(dir_ / "stage-1-of-2");
  const RunResult again = run(c, 2);
  ASSERT_FALSE(again.summaries[0].ok());
  EXPECT_NE(again.summaries[0].status().message().find("stage 1 of 2 has no checkpoint under " +
                                                       dir_.string()),
            std::string::npos)
      << again.summaries[0].status().message();
}

TEST_F(PipelineTrainer, TheWorldMustHoldWholeReplicasOfThePipeline) {
  const RunResult r = run(config(3, 4, "1f1b"), 2);
  ASSERT_FALSE(r.summaries[0].ok());
  EXPECT_NE(
      r.summaries[0].status().message().find("3 stages need a world that is a multiple of 3 ranks"),
      std::string::npos)
      << r.summaries[0].status().message();
}

}  // namespace
}  // namespace ringmaster::trainer
