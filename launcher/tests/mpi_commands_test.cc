// MPI mode's pure builders: the hostfile the operator writes, this pod's sshd_config, and the
// mpirun command line pod 0 runs.

#include "launcher/mpi_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ringmaster::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseHostfile, ReadsTheOperatorsHostfile) {
  auto hosts = parseHostfile("j-worker-0.j.ns.svc slots=2\nj-worker-1.j.ns.svc slots=2\n");
  ASSERT_TRUE(hosts.ok()) << hosts.status().toString();
  EXPECT_THAT(*hosts, ElementsAre(HostfileEntry{"j-worker-0.j.ns.svc", 2},
                                  HostfileEntry{"j-worker-1.j.ns.svc", 2}));
}

TEST(ParseHostfile, SkipsCommentsAndBlankLinesAndDefaultsToOneSlot) {
  auto hosts = parseHostfile("# the job\n\n  a   # first\nb slots=3 max_slots=4\n");
  ASSERT_TRUE(hosts.ok()) << hosts.status().toString();
  EXPECT_THAT(*hosts, ElementsAre(HostfileEntry{"a", 1}, HostfileEntry{"b", 3}));
}

TEST(ParseHostfile, RejectsBadSlotsDuplicatesAndEmptyFilesNamingTheLine) {
  auto bad = parseHostfile("a slots=2\nb slots=zero\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("line 2"));
  EXPECT_FALSE(parseHostfile("a cpus=2\n").ok());
  EXPECT_FALSE(parseHostfile("a slots=0\n").ok());
  auto twice = parseHostfile("a\na slots=2\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("listed twice"));
  EXPECT_FALSE(parseHostfile("# nothing\n\n").ok());
}

SshdSettings settings() {
  SshdSettings s;
  s.listen_address = "10.0.0.7";
  s.port = 2222;
  s.host_key = "/tmp/w/ssh_host_ed25519_key";
  s.authorized_keys = "/root/.ssh/authorized_keys";
  s.session_env = {{"PATH", "/opt/bin:/usr/bin"}, {"POD_IP", "10.0.0.7"}};
  return s;
}

TEST(SshdConfig, ListensOnThePodAddressWithTheSecretsKeysAndNeedsNoRootSetup) {
  const std::string config = sshdConfig(settings());
  EXPECT_THAT(config, HasSubstr("\nListenAddress 10.0.0.7\n"));
  EXPECT_THAT(config, HasSubstr("\nPort 2222\n"));
  EXPECT_THAT(config, HasSubstr("\nHostKey \"/tmp/w/ssh_host_ed25519_key\"\n"));
  EXPECT_THAT(config, HasSubstr("\nAuthorizedKeysFile \"/root/.ssh/authorized_keys\"\n"));
  EXPECT_THAT(config, HasSubstr("\nStrictModes no\n"));
  EXPECT_THAT(config, HasSubstr("\nUsePAM no\n"));
  EXPECT_THAT(config, HasSubstr("\nPidFile none\n"));
  EXPECT_THAT(config, HasSubstr("\nPasswordAuthentication no\n"));
  EXPECT_TRUE(validateSshdSettings(settings()).ok());
}

TEST(SshdConfig, PassesThePodEnvironmentToLoginsOnOneSetEnvLine) {
  const std::string config = sshdConfig(settings());
  EXPECT_THAT(config, HasSubstr("\nSetEnv \"PATH=/opt/bin:/usr/bin\" \"POD_IP=10.0.0.7\"\n"));
  SshdSettings none = settings();
  none.session_env.clear();
  EXPECT_THAT(sshdConfig(none), Not(HasSubstr("SetEnv")));
}

TEST(SshdConfig, RejectsWhatTheConfigSyntaxCannotCarry) {
  SshdSettings s = settings();
  s.authorized_keys = "/keys/%u/authorized_keys";  // sshd would expand %u
  EXPECT_FALSE(validateSshdSettings(s).ok());
  s = settings();
  s.host_key = "relative/key";
  EXPECT_FALSE(validateSshdSettings(s).ok());
  s = settings();
  s.port = 0;
  EXPECT_FALSE(validateSshdSettings(s).ok());
  s = settings();
  s.listen_address = "";
  EXPECT_FALSE(validateSshdSettings(s).ok());
  s = settings();
  s.session_env.push_back({"X", "two\nlines"});
  auto st = validateSshdSettings(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("'X'"));
}

TEST(SshdConfig, QuotesBackslashesAndQuotesInValues) {
  struct Case {
    std::string value, written;
  };
  const Case cases[] = {
      {"plain", "plain"},
      {"C:\\", "C:\\\\"},  // a trailing backslash would swallow the closing quote
      {"say \"hi\"", "say \\\"hi\\\""},
      {"a\\\"b", "a\\\\\\\"b"},
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(sshdQuoted(c.value), c.written) << c.value;
  SshdSettings s = settings();
  s.session_env = {{"DATA_DIR", "C:\\"}, {"GREETING", "say \"hi\""}};
  EXPECT_TRUE(validateSshdSettings(s).ok());
  EXPECT_THAT(sshdConfig(s),
              HasSubstr("\nSetEnv \"DATA_DIR=C:\\\\\" \"GREETING=say \\\"hi\\\"\"\n"));
}

// The real sshd reads back exactly the values written (sshd -T prints the effective config).
TEST(SshdConfig, RealSshdReadsTheValuesBack) {
  if (access("/usr/sbin/sshd", X_OK) != 0) GTEST_SKIP() << "no /usr/sbin/sshd";
  std::error_code ec;  // sshd insists on its privilege separation directory, as MPI mode makes it
  std::filesystem::create_directories("/run/sshd", ec);
  if (access("/run/sshd", F_OK) != 0) GTEST_SKIP() << "cannot create /run/sshd";
  char tmpl[] = "/tmp/sshd_config_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_EQ(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + dir + "/hk").c_str()), 0);
  SshdSettings s = settings();
  s.listen_address = "127.0.0.1";
  s.host_key = dir + "/hk";
  s.session_env = {{"DATA_DIR", "C:\\"}, {"GREETING", "say \"hi\""}, {"MIXED", "a\\\"b c"}};
  ASSERT_TRUE(validateSshdSettings(s).ok());
  std::ofstream(dir + "/cfg") << sshdConfig(s);
  FILE* p = popen(("/usr/sbin/sshd -T -f " + dir + "/cfg 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_THAT(out, HasSubstr("setenv DATA_DIR=C:\\\n"));
  EXPECT_THAT(out, HasSubstr("setenv GREETING=say \"hi\"\n"));
  EXPECT_THAT(out, HasSubstr("setenv MIXED=a\\\"b c\n"));
  std::filesystem::remove_all(dir);
}

TEST(ForwardToSshSession, KeepsThePodsVariablesButNotPerLoginOrOpenMpisOwn) {
  EXPECT_TRUE(forwardToSshSession("PATH", "/usr/bin"));
  EXPECT_TRUE(forwardToSshSession("LD_PRELOAD", "libnss_wrapper.so"));
  EXPECT_TRUE(forwardToSshSession("NSS_WRAPPER_HOSTS", "/r/hosts"));
  EXPECT_TRUE(forwardToSshSession("POD_IP", "10.0.0.7"));
  EXPECT_TRUE(forwardToSshSession("ASAN_OPTIONS", "a=1:b=2"));
  EXPECT_FALSE(forwardToSshSession("HOME", "/root"));
  EXPECT_FALSE(forwardToSshSession("USER", "root"));
  EXPECT_FALSE(forwardToSshSession("SSH_CONNECTION", "x"));
  EXPECT_FALSE(forwardToSshSession("OMPI_COMM_WORLD_RANK", "0"));
  EXPECT_FALSE(forwardToSshSession("PMIX_RANK", "0"));
  EXPECT_FALSE(forwardToSshSession("MULTI", "line\nvalue"));
  EXPECT_TRUE(forwardToSshSession("QUOTED", "a\"b\\"));  // sshdConfig escapes both
}

MpirunSettings mpirun() {
  MpirunSettings s;
  s.mpirun = "/usr/bin/mpirun";
  s.hostfile = "/etc/ringmaster/hostfile";
  s.np = 4;
  s.ssh_port = 2222;
  s.identity = "/tmp/w/ssh_identity";
  s.program = {"/usr/bin/ringmaster-trainer", "--config", "/etc/ringmaster/trainer.yaml",
               "--backend", "mpi"};
  s.env = {{"RINGMASTER_JOB", "j"}, {"RINGMASTER_BACKEND", "mpi"}};
  return s;
}

// The value that follows `flag` ... `name` in argv (e.g. "--mca", "plm_rsh_agent").
std::string mcaValue(const std::vector<std::string>& argv, const std::string& name) {
  for (size_t i = 0; i + 2 < argv.size(); ++i) {
    if (argv[i] == "--mca" && argv[i + 1] == name) return argv[i + 2];
  }
  return "<absent>";
}

bool contains(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
}

TEST(MpirunArgv, RunsTheProgramOverTheHostfileSlotBySlotThroughThePodsSshd) {
  auto argv = mpirunArgv(mpirun());
  ASSERT_TRUE(argv.ok()) << argv.status().toString();
  EXPECT_EQ(argv->front(), "/usr/bin/mpirun");
  EXPECT_TRUE(contains(*argv, {"--hostfile", "/etc/ringmaster/hostfile"}));
  EXPECT_TRUE(contains(*argv, {"-np", "4"}));
  EXPECT_TRUE(contains(*argv, {"--map-by", "slot"}));
  EXPECT_TRUE(contains(*argv, {"--bind-to", "none"}));
  EXPECT_EQ(mcaValue(*argv, "orte_keep_fqdn_hostnames"), "1");
  EXPECT_EQ(mcaValue(*argv, "plm_rsh_agent"),
            "ssh -p 2222 -i /tmp/w/ssh_identity -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes "
            "-o ConnectionAttempts=10");
  EXPECT_TRUE(contains(*argv, {"-x", "RINGMASTER_JOB=j", "-x", "RINGMASTER_BACKEND=mpi"}));
  // The program comes last, untouched.
  const std::vector<std::string> program = mpirun().program;
  ASSERT_GE(argv->size(), program.size());
  EXPECT_TRUE(std::equal(program.begin(), program.end(), argv->end() - program.size()));
  EXPECT_THAT(*argv, Not(::testing::Contains("--allow-run-as-root")));
  EXPECT_EQ(mcaValue(*argv, "btl_tcp_if_include"), "<absent>");
}

TEST(MpirunArgv, PinsTcpToThePodsInterfaceAndAllowsRootWhenAsked) {
  MpirunSettings s = mpirun();
  s.iface = "eth0";
  s.allow_run_as_root = true;
  auto argv = mpirunArgv(s);
  ASSERT_TRUE(argv.ok()) << argv.status().toString();
  EXPECT_EQ(mcaValue(*argv, "btl_tcp_if_include"), "eth0");
  EXPECT_EQ(mcaValue(*argv, "oob_tcp_if_include"), "eth0");
  EXPECT_THAT(*argv, ::testing::Contains("--allow-run-as-root"));
}

TEST(MpirunArgv, ForwardsSecretsByNameOnlySoTheyStayOffTheCommandLine) {
  MpirunSettings s = mpirun();
  s.forward_env = {"RINGMASTER_STORE_SECRET"};
  auto argv = mpirunArgv(s);
  ASSERT_TRUE(argv.ok()) << argv.status().toString();
  EXPECT_TRUE(contains(*argv, {"-x", "RINGMASTER_STORE_SECRET"}));
  s.forward_env = {"A=B"};
  EXPECT_FALSE(mpirunArgv(s).ok());
}

TEST(MpirunArgv, RejectsWhatOpenMpiWouldSplitOrNothingToRun) {
  MpirunSettings s = mpirun();
  s.identity = "/tmp/my keys/id";
  EXPECT_FALSE(mpirunArgv(s).ok());
  s = mpirun();
  s.program.clear();
  EXPECT_FALSE(mpirunArgv(s).ok());
  s = mpirun();
  s.np = 0;
  EXPECT_FALSE(mpirunArgv(s).ok());
  s = mpirun();
  s.env.push_back({"A=B", "c"});
  EXPECT_FALSE(mpirunArgv(s).ok());
}

}  // namespace
}  // namespace ringmaster::launcher
