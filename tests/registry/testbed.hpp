#pragma once
// What the registry client tests run against: the project's test registries
// (tests/test_registries/start.sh; plain, TLS + Bearer token, TLS + Basic, sharing one storage),
// an image with fresh random content pushed to them once per run, and fault_proxy.py in
// front of the plain registry for the failures a real registry will not produce on demand.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_registry.hpp"

namespace capsa::test {

struct Blob {
  std::string digest;
  std::uint64_t size = 0;
};

struct PushedImage {
  std::string repository;  // "public/…" (anonymous pull allowed) or "private/…"
  Blob layer;              // 3 MiB of random bytes
  Blob config;
  std::string oci_digest, docker_digest, index_digest;  // tags "oci", "docker", "index"
};

// A child process that lives as long as this object (killed and reaped on destruction).
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  std::string read_line();  // from its stdout

 private:
  int pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
};

class FaultProxy {
 public:
  explicit FaultProxy(const std::string& upstream_host);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  // Replaces the fault configuration (fault_proxy.py's header lists the keys) and clears the log.
  void configure(const nlohmann::json& config);
  std::vector<nlohmann::json> requests() const;  // logged since the last configure()
  std::string front() const { return "127.0.0.1:" + std::to_string(front_port_); }

 private:
  std::string dir_;
  int front_port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

// Pushed once per run (first use); nullptr when the suite runs without the test registries.
struct Testbed {
  TestRegistry registries;
  PushedImage public_image;
  PushedImage private_image;
  FaultProxy proxy;
};
Testbed* testbed();

}  // namespace capsa::test
