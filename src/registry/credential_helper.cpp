// The docker-credential-helpers protocol: `docker-credential-<name> get`, the server URL on
// stdin, JSON {"ServerURL","Username","Secret"} on stdout. The secret travels only through
// the pipe, never through argv or the environment.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>

#include "registry/credentials.hpp"
#include "registry/json_fields.hpp"
#include "util/error.hpp"
#include "util/run_program.hpp"

namespace capsa::registry {

namespace {

constexpr int kHelperTimeoutSeconds = 60;

bool valid_helper_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  }) && name.find("..") == std::string::npos;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "…";
  return line;
}

}  // namespace

std::optional<Credentials> run_credential_helper(const std::string& helper, const std::string& server_url) {
  if (!valid_helper_name(helper)) throw FormatError("invalid credential helper name '" + helper + "' in the docker config");
  const std::string program = "docker-credential-" + helper;
  const Captured output =
      run_captured({.argv = {program, "get"}}, server_url, {.timeout = std::chrono::seconds(kHelperTimeoutSeconds)});
  if (!output.status.success()) {
    if (output.status.exited() && output.status.exit_code() == 127)
      throw Error("credential helper " + program + " (named in the docker config) is not on PATH");
    // The helpers' documented "not found" answer means: no credentials, go anonymous.
    std::string lowered = output.out + output.err;
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lowered.find("credentials not found") != std::string::npos) return std::nullopt;
    const std::string why = first_line(output.err.empty() ? output.out : output.err);
    throw Error("credential helper " + program + " failed for " + server_url + (why.empty() ? "" : ": " + why));
  }
  const auto reply = nlohmann::json::parse(output.out, nullptr, false);
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("Secret") || !reply["Secret"].is_string())
    throw Error("credential helper " + program + " answered something that is not {\"Username\", \"Secret\"} JSON");
  Credentials credentials;
  credentials.source = program;
  credentials.username = string_field(reply, "Username");
  const std::string secret = reply["Secret"].get<std::string>();
  if (credentials.username == "<token>")
    credentials.identity_token = secret;
  else
    credentials.password = secret;
  return credentials;
}

}  // namespace capsa::registry
