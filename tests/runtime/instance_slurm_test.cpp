// Instances end with their Slurm job (runtime/instance_job.hpp), on the test cluster
// (tests/slurm): a batch script starts an instance; when the job is cancelled, or simply
// ends, the instance's processes, its record and its mounts go with it. The same holds
// for a kept image (runtime/kept_image.hpp) started by a container of the job.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/instance_support.hpp"
#include "runtime/run_support.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::instance_testing {
namespace {

using nlohmann::json;

class InstanceInSlurmJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_program("sbatch")) GTEST_SKIP() << "no Slurm client";
    ASSERT_EQ(::chmod(work.path().c_str(), 0755), 0);
    image = make_instance_image(work);
  }

  // Submits a script that starts instance `name` on node n1 (or the spare node, in its
  // partition of its own) and then runs `rest`, within `time_limit`; returns the job id
  // once the instance has started.
  std::string submit(const std::string& name, const std::string& rest, const std::string& time_limit = "00:05:00",
                     bool on_spare_node = false) {
    const std::string where =
        on_spare_node ? "#SBATCH --partition=spare\n#SBATCH --no-requeue\n" : "#SBATCH --nodelist=n1\n";
    const std::string script = "#!/bin/sh\n#SBATCH --time=" + time_limit + "\n" + where +
                               "#SBATCH --output=" + (work / "job-%j.out") + "\n" + test::capsa_binary() +
                               " instance start " + image + " " + name + " && hostname > " + (work / "host") +
                               " && echo started\n" + rest + "\n";
    auto submitted = test::run_process({"sbatch", "--parsable", work.write("job.sh", script)});
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    std::string job = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    for (int i = 0; i < 600 && !host_written(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return job;
  }

  // Whether the job has written its node's name: the shell makes the file before
  // hostname writes to it (seen once: an empty name, and a record path made of it).
  bool host_written() {
    if (!std::filesystem::exists(work / "host")) return false;
    const std::string host = test::read_file(work / "host");
    return !host.empty() && host.back() == '\n';
  }

  // The record of `name` in the store of the node the job ran on (each logical node has
  // a host name of its own).
  std::string record_path(const std::string& name) {
    std::string host = test::read_file(work / "host");
    if (host.empty()) return work / "no-host-name-written";
    host.pop_back();
    std::string dir = record_directory();
    dir = dir.substr(0, dir.rfind('/'));
    dir = dir.substr(0, dir.rfind('/') + 1) + host + "/" + ::getpwuid(::getuid())->pw_name;
    return dir + "/" + name + ".json";
  }

  // Waits (bounded) until the instance's init and every process of the image are gone
  // and its record has been removed.
  void expect_gone(const std::string& record, int pid, const std::string& name) {
    for (int i = 0; i < 300 && (process_alive(pid) || std::filesystem::exists(record) || processes_naming(image) > 0);
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(process_alive(pid)) << "the instance's init";
    EXPECT_FALSE(std::filesystem::exists(record)) << "the record is removed, so nothing is listed";
    EXPECT_EQ(processes_naming(image), 0) << "no process of the instance";
    EXPECT_EQ(runtime::testing::loop_devices_for(image), 0) << "nothing mounted";
    // Stopped by its monitor, which watched the step (Slurm's proctrack/linuxproc does
    // not find processes that left the script's process tree).
    std::string log = record.substr(0, record.rfind("/app/")) + "/logs" + record.substr(record.rfind("/app/") + 4);
    log = log.substr(0, log.size() - 5) + ".err";
    EXPECT_NE(test::read_file(log).find("the Slurm job step of instance " + name + " has ended: stopping it"),
              std::string::npos)
        << log;
  }

  test::TempDir work;
  std::string image;
};

TEST_F(InstanceInSlurmJob, ScancelStopsTheInstance) {
  const std::string name = unique_name("slurm-cancel");
  const std::string job = submit(name, "sleep 300");
  ASSERT_TRUE(std::filesystem::exists(work / "host")) << "the job started the instance";
  const std::string path = record_path(name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  json record = json::parse(test::read_file(path));
  EXPECT_EQ(record["slurmJobId"], job);
  EXPECT_EQ(record["slurmStepId"], "batch");
  const int pid = record["pid"].get<int>();
  EXPECT_TRUE(process_alive(pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(process_alive(pid)) << "it lives as long as the job";
  EXPECT_EQ(test::run_process({"scancel", job}).exit_code, 0);
  expect_gone(path, pid, name);
}

TEST_F(InstanceInSlurmJob, TheEndOfTheJobStopsTheInstance) {
  const std::string name = unique_name("slurm-end");
  submit(name, "sleep 2");  // the batch script returns: the job ends
  ASSERT_TRUE(std::filesystem::exists(work / "host"));
  const std::string path = record_path(name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  expect_gone(path, json::parse(test::read_file(path))["pid"].get<int>(), name);
}

TEST_F(InstanceInSlurmJob, TheJobsTimeLimitStopsTheInstance) {
  const std::string name = unique_name("slurm-timeout");
  const std::string job = submit(name, "sleep 600", "00:01:00");  // Slurm's smallest limit: one minute
  ASSERT_TRUE(std::filesystem::exists(work / "host"));
  const std::string path = record_path(name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const int pid = json::parse(test::read_file(path))["pid"].get<int>();
  // slurmctld looks at time limits every 30 s or so: the job ends between 60 and 100 s.
  for (int i = 0; i < 1500 && process_alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto state = test::run_process({"sacct", "-n", "-X", "-o", "State", "-j", job});
  expect_gone(path, pid, name);
  if (state.exit_code == 0 && !state.out.empty()) {  // accounting is optional on the test cluster
    EXPECT_NE(state.out.find("TIMEOUT"), std::string::npos) << state.out;
  }
}

// An administrator takes the node down at once (`scontrol update State=DOWN`, what
// draining a node for maintenance comes to when its jobs cannot wait): Slurm ends the job,
// and the instance with it. On the spare node, so no other suite's job is on it.
TEST_F(InstanceInSlurmJob, TakingTheNodeDownStopsTheInstance) {
  if (::geteuid() != 0) GTEST_SKIP() << "only Slurm's administrator (root here) sets a node down";
  const std::string name = unique_name("slurm-down");
  submit(name, "sleep 300", "00:05:00", true);
  ASSERT_TRUE(std::filesystem::exists(work / "host")) << "the job started the instance";
  EXPECT_EQ(test::read_file(work / "host"), "spare\n");
  const std::string path = record_path(name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const int pid = json::parse(test::read_file(path))["pid"].get<int>();
  EXPECT_TRUE(process_alive(pid));
  auto down = test::run_process({"scontrol", "update", "NodeName=spare", "State=DOWN", "Reason=capsa-test"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  expect_gone(path, pid, name);
  // Back in service for the next run (slurmd's next registration may have done it already:
  // ReturnToService=2, and then Slurm refuses RESUME).
  test::run_process({"scontrol", "update", "NodeName=spare", "State=RESUME"});
  std::string state;
  for (int i = 0; i < 150 && state != "idle\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    state = test::run_process({"sinfo", "-h", "-n", "spare", "-o", "%T"}).out;
  }
  EXPECT_EQ(state, "idle\n") << "the spare node is back in service";
}

// Containers of a batch script keep their image for far longer than the job lasts; when
// the script returns, the kept image goes with the job step, not after its linger.
TEST_F(InstanceInSlurmJob, AKeptImageEndsWithItsJob) {
  const std::string mark = "CAPSA_TEST_MARK=" + work.path();
  std::string script =
      "#!/bin/sh\n#SBATCH --time=00:05:00\n#SBATCH --nodelist=n1\n#SBATCH --output=" + (work / "job-%j.out") +
      "\nexport CAPSA_KEEP_IMAGE_SECONDS=600 " + mark + "\n";
  for (const char* n : {"1", "2"})
    script += test::capsa_binary() + " exec " + image + " readlink /proc/self/ns/mnt > " + (work / "ns") + n + "\n";
  script += "hostname > " + (work / "host") + "\nsleep 3\n";
  auto submitted = test::run_process({"sbatch", "--parsable", work.write("job.sh", script)});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  for (int i = 0; i < 600 && !std::filesystem::exists(work / "host"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(std::filesystem::exists(work / "host")) << "the job ran its containers";
  const std::string first = test::read_file(work / "ns1");
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(test::read_file(work / "ns2"), first) << "the second container joined the first one's kept image";
  EXPECT_FALSE(test::processes_with_environment(mark).empty()) << "the image is kept while the job runs";
  // The script ends about 3 s from now; 60 s is a tenth of the linger.
  // The loop device of a root container is released by the kernel shortly after its
  // mount namespace's last process.
  std::vector<std::string> left = test::processes_with_environment(mark);
  for (int i = 0; i < 600 && (!left.empty() || runtime::testing::loop_devices_for(image) > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = test::processes_with_environment(mark);
  }
  EXPECT_TRUE(left.empty()) << "still running after the job: " << left.front();
  EXPECT_EQ(runtime::testing::loop_devices_for(image), 0) << "nothing mounted";
  EXPECT_EQ(processes_naming(image), 0);
}

}  // namespace
}  // namespace capsa::instance_testing
