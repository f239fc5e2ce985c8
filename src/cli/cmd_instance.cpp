// `capsa instance start|run|list|stop|stats`: Apptainer's commands and flags
// (cmd/internal/cli/instance_*_linux.go) over runtime/instance.hpp; `save` is capsa's
// own and capsa-full's (cmd_instance_save.cpp).
#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "runtime/instance.hpp"
#include "util/error.hpp"

namespace capsa::cli {
namespace {

// IMAGE NAME [ARGS...]: the request's first argument is the instance's name.
ActionRunner start_as(const std::string& action, const std::shared_ptr<std::string>& pid_file) {
  return [action, pid_file](runtime::ActionRequest request) {
    if (request.args.empty())
      throw Error("instance " + action + " needs an IMAGE and a NAME: instance " + action +
                  " [FLAGS] IMAGE NAME [ARGS...]");
    const std::string name = request.args.front();
    request.args.erase(request.args.begin());
    request.action = action == "run" ? "run" : "start";
    if (pid_file->empty()) *pid_file = env_value("PID_FILE").value_or("");
    runtime::start_instance(std::move(request), name, *pid_file);
  };
}

void add_list(CLI::App& instance) {
  struct Flags {
    bool json = false, logs = false;
    std::string name = "*";
    std::string user;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand("list", "List your running instances: list [FLAGS] [NAME-PATTERN]");
  cmd->add_flag("-j,--json", flags->json, "Print as JSON");
  cmd->add_flag("-l,--logs", flags->logs, "Show the paths of the instances' output and error logs");
  cmd->add_option("-u,--user", flags->user, "List the instances of this user (root only)");
  cmd->add_option("name", flags->name, "Shell pattern of the names to list (default: all)");
  cmd->callback([flags] {
    if (flags->json && flags->logs) throw Error("instance list: --json and --logs cannot be used together");
    runtime::list_instances(flags->name,
                            flags->json   ? runtime::ListFormat::json
                            : flags->logs ? runtime::ListFormat::logs
                                          : runtime::ListFormat::table,
                            flags->user);
  });
}

void add_stop(CLI::App& instance) {
  struct Flags {
    bool all = false, force = false;
    std::string signal = "SIGINT";  // Apptainer's default
    int timeout = 10;
    std::string name, user;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand("stop", "Stop instances: stop [FLAGS] NAME (a shell pattern), or stop --all");
  cmd->add_flag("-a,--all", flags->all, "Stop all your instances");
  cmd->add_flag("-F,--force", flags->force, "Kill them at once (SIGKILL)");
  cmd->add_option("-s,--signal", flags->signal, "Signal to send (name or number)")->capture_default_str();
  cmd->add_option("-t,--timeout", flags->timeout, "Seconds to wait before killing them")->capture_default_str();
  cmd->add_option("-u,--user", flags->user, "Stop the instances of this user (root only)");
  cmd->add_option("name", flags->name, "Name (or shell pattern) of the instances to stop");
  cmd->callback([flags] {
    if (flags->all == !flags->name.empty())
      throw Error("instance stop: give the name of an instance, or --all (see `capsa help instance stop`)");
    if (flags->timeout < 0)
      throw Error("instance stop --timeout " + std::to_string(flags->timeout) + ": give seconds, 0 or more");
    const int signal = flags->force ? SIGKILL : runtime::parse_signal(flags->signal);
    runtime::stop_instances(flags->all ? "*" : flags->name, signal, std::chrono::seconds(flags->timeout), flags->user);
  });
}

void add_stats(CLI::App& instance) {
  struct Flags {
    bool json = false;
    std::string name, user;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand(
      "stats", "Resource use of an instance, summed over its processes (one sample over a second): stats [FLAGS] NAME");
  cmd->add_flag("-j,--json", flags->json, "Print as JSON");
  cmd->add_option("-u,--user", flags->user, "An instance of this user (root only)");
  cmd->add_option("name", flags->name, "The instance")->required();
  cmd->callback([flags] { runtime::print_instance_stats(flags->name, flags->json, flags->user); });
}

}  // namespace

void add_instance_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("instance", "Run containers in the background (instances) and manage them");
  cmd->require_subcommand(1);
  for (const char* action : {"start", "run"}) {
    auto pid_file = std::make_shared<std::string>();
    CLI::App* sub = add_action(*cmd, action,
                               std::string("Start an instance running the image's ") +
                                   (action == std::string("run") ? "runscript" : "start script") + ": " + action +
                                   " [FLAGS] IMAGE NAME [ARGS...]",
                               nullptr, start_as(action, pid_file));
    sub->add_option("--pid-file", *pid_file, "Write the instance's PID to this file (also APPTAINER_PID_FILE)");
  }
  add_list(*cmd);
  add_stop(*cmd);
  add_stats(*cmd);
}

}  // namespace capsa::cli
