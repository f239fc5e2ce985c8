#include "registry/testbed.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::test {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string here() { return std::string(CAPSA_REGISTRY_TEST_DIR); }

PushedImage push_image(const std::string& registry, const std::string& repository) {
  auto result = run_process({"/usr/bin/python3", here() + "/push_test_image.py", registry, repository}, "", 60);
  if (result.exit_code != 0) throw std::runtime_error("push_test_image.py failed: " + result.err);
  auto json = nlohmann::json::parse(result.out);
  auto blob = [](const nlohmann::json& j) { return Blob{j["digest"], j["size"]}; };
  return PushedImage{repository, blob(json["layer"]), blob(json["config"]), json["oci"]["digest"],
                     json["docker"]["digest"], json["index"]["digest"]};
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
}

ChildProcess::~ChildProcess() {
  ::close(stdin_fd_);  // fault_proxy.py exits when its stdin closes
  ::close(stdout_fd_);
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::string ChildProcess::read_line() {
  std::string line;
  char c;
  while (::read(stdout_fd_, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

FaultProxy::FaultProxy(const std::string& upstream_host) {
  char tmpl[] = "/tmp/capsa-fault-proxy-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      "/usr/bin/python3", here() + "/fault_proxy.py", "http://" + upstream_host, dir_ + "/config.json", dir_ + "/log"});
  const std::string ready = process_->read_line();
  if (ready.empty()) throw std::runtime_error("fault_proxy.py did not start");
  front_port_ = nlohmann::json::parse(ready)["front"];
}

FaultProxy::~FaultProxy() {
  process_.reset();
  std::filesystem::remove_all(dir_);
}

void FaultProxy::configure(const nlohmann::json& config) {
  std::ofstream(dir_ + "/log", std::ios::trunc).close();
  const std::string temp = dir_ + "/config.json.new";
  std::ofstream(temp) << config.dump();
  std::rename(temp.c_str(), (dir_ + "/config.json").c_str());
}

std::vector<nlohmann::json> FaultProxy::requests() const {
  std::vector<nlohmann::json> entries;
  std::ifstream in(dir_ + "/log");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) entries.push_back(nlohmann::json::parse(line));
  return entries;
}

Testbed* testbed() {
  static std::unique_ptr<Testbed> instance;
  static bool tried = false;
  if (!tried) {
    tried = true;
    if (env_or_empty("CAPSA_TEST_REGISTRY_STATE").empty()) return nullptr;
    const TestRegistry& registries = test_registry();
    if (registries.plain.empty()) return nullptr;
    // Fresh names per run: the storage is shared with other suites and kept between runs.
    const std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
    auto pub = push_image(registries.plain, "public/client-test-" + suffix);
    auto priv = push_image(registries.plain, "private/client-test-" + suffix);
    instance.reset(new Testbed{registries, pub, priv, FaultProxy(registries.plain)});
  }
  return instance.get();
}

}  // namespace capsa::test
