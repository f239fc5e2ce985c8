// `capsa instance start|run|list|stop|stats`: Apptainer's commands and flags
// (cmd/internal/cli/instance_*_linux.go) over runtime/instance.hpp.
#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "runtime/instance.hpp"
#include "util/error.hpp"

namespace capsa::cli {
namespace {

// IMAGE NAME [ARGS...]: the request's first argument is the instance's name.
ActionRunner start_as(const std::string& action) {
  return [action](runtime::ActionRequest request) {
    if (request.args.empty())
      throw Error("instance " + action + " needs an IMAGE and a NAME: instance " + action +
                  " [FLAGS] IMAGE NAME [ARGS...]");
    const std::string name = request.args.front();
    request.args.erase(request.args.begin());
    request.action = action == "run" ? "run" : "start";
    runtime::start_instance(std::move(request), name);
  };
}

void add_list(CLI::App& instance) {
  struct Flags {
    bool json = false, logs = false;
    std::string name = "*";
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand("list", "List your running instances: list [FLAGS] [NAME-PATTERN]");
  cmd->add_flag("-j,--json", flags->json, "Print as JSON");
  cmd->add_flag("-l,--logs", flags->logs, "Show the paths of the instances' output and error logs");
  cmd->add_option("name", flags->name, "Shell pattern of the names to list (default: all)");
  cmd->callback([flags] {
    if (flags->json && flags->logs) throw Error("instance list: --json and --logs cannot be used together");
    runtime::list_instances(flags->name, flags->json   ? runtime::ListFormat::json
                                         : flags->logs ? runtime::ListFormat::logs
                                                       : runtime::ListFormat::table);
  });
}

void add_stop(CLI::App& instance) {
  struct Flags {
    bool all = false, force = false;
    std::string signal = "SIGTERM";
    int timeout = 10;
    std::string name;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand("stop", "Stop instances: stop [FLAGS] NAME (a shell pattern), or stop --all");
  cmd->add_flag("-a,--all", flags->all, "Stop all your instances");
  cmd->add_flag("-F,--force", flags->force, "Kill them at once (SIGKILL)");
  cmd->add_option("-s,--signal", flags->signal, "Signal to send (name or number)")->capture_default_str();
  cmd->add_option("-t,--timeout", flags->timeout, "Seconds to wait before killing them")->capture_default_str();
  cmd->add_option("name", flags->name, "Name (or shell pattern) of the instances to stop");
  cmd->callback([flags] {
    if (flags->all == !flags->name.empty())
      throw Error("instance stop: give the name of an instance, or --all (see `capsa help instance stop`)");
    if (flags->timeout < 0)
      throw Error("instance stop --timeout " + std::to_string(flags->timeout) + ": give seconds, 0 or more");
    const int signal = flags->force ? SIGKILL : runtime::parse_signal(flags->signal);
    runtime::stop_instances(flags->all ? "*" : flags->name, signal, std::chrono::seconds(flags->timeout));
  });
}

void add_stats(CLI::App& instance) {
  struct Flags {
    bool json = false, no_stream = false;
    std::string name;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance.add_subcommand(
      "stats", "Resource use of an instance, summed over its processes (one sample over a second): stats [FLAGS] NAME");
  cmd->add_flag("-j,--json", flags->json, "Print as JSON");
  cmd->add_flag("--no-stream", flags->no_stream, "One sample (capsa always prints one)");
  cmd->add_option("name", flags->name, "The instance")->required();
  cmd->callback([flags] { runtime::print_instance_stats(flags->name, flags->json); });
}

}  // namespace

void add_instance_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("instance", "Run containers in the background (instances) and manage them");
  cmd->require_subcommand(1);
  add_action(*cmd, "start", "Start an instance running the image's start script: start [FLAGS] IMAGE NAME [ARGS...]",
             nullptr, start_as("start"));
  add_action(*cmd, "run", "Start an instance running the image's runscript: run [FLAGS] IMAGE NAME [ARGS...]", nullptr,
             start_as("run"));
  add_list(*cmd);
  add_stop(*cmd);
  add_stats(*cmd);
}

}  // namespace capsa::cli
