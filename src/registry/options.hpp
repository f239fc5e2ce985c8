#pragma once
// How the registry client talks to the network. Defaults suit a login node; tests shorten
// the timeouts. options_from_environment() reads the variables users already set for
// Singularity/Apptainer.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace capsa::registry {

// Reads one environment variable; injectable so tests do not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env(const std::string& name);

struct ClientOptions {
  // Plain http:// to the registry (--nohttps, SINGULARITY_NOHTTPS, APPTAINER_NOHTTPS).
  bool insecure_http = false;
  // Extra PEM CA bundle trusted in addition to the system CAs (CAPSA_REGISTRY_CA).
  std::string ca_file;
  // The server's TLS certificate is not checked: only for a keyserver an administrator
  // added with `keyserver add --insecure`, as Apptainer allows.
  bool skip_tls_verify = false;
  std::chrono::milliseconds connect_timeout{30'000};
  // A transfer slower than stall_bytes_per_second for stall_seconds is abandoned (and
  // retried): this is how a registry that stops sending is detected.
  long stall_seconds = 60;
  long stall_bytes_per_second = 1;
  // Attempts per request after the first, for 429/5xx and transient network errors.
  int max_retries = 4;
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_max{30'000};
  // A Retry-After longer than this fails the request instead of sleeping for it.
  std::chrono::seconds max_retry_after{120};
  // Tokens ask for push as well as pull (capsa push). Never asked for otherwise: some
  // registries refuse a pull,push scope to users who may only pull.
  bool push_access = false;
  // Size of the PATCH requests of a blob upload (CAPSA_PUSH_CHUNK_BYTES): a chunk lost
  // to a dropped connection is all that is sent again.
  std::uint64_t upload_chunk_bytes = 64 << 20;
  // Concurrent blob downloads in fetch_blobs().
  int parallel_downloads = 8;
  // Warnings (retries, resumes), possibly from several download threads at once. Never
  // receives a secret.
  std::function<void(std::string_view)> log;
};

// True when any of the variables asks for plain HTTP ("1", "true", "yes", case-insensitive).
bool nohttps_from_environment(const EnvLookup& env = process_env);

// Defaults plus insecure_http and ca_file (CAPSA_REGISTRY_CA) from the environment.
ClientOptions options_from_environment(const EnvLookup& env = process_env);

}  // namespace capsa::registry
