#include "cli/global_flags.hpp"

#include "cli/site_config.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct GlobalFlags {
  bool silent = false;
  bool quiet = false;
  bool verbose = false;
  bool debug = false;
  bool nocolor = false;
  bool build_config = false;
  std::string config;
};

GlobalFlags& flags() {
  static GlobalFlags instance;
  return instance;
}

void apply(const GlobalFlags& f) {
  // Apptainer's order of precedence (apptainer.go setSylogMessageLevel): debug, verbose,
  // quiet, silent.
  if (f.debug) {
    log::set_level(log::Level::debug);
  } else if (f.verbose) {
    log::set_level(log::Level::verbose);
  } else if (f.quiet) {
    log::set_level(log::Level::warning);
  } else if (f.silent) {
    log::set_level(log::Level::error);
  }
}

}  // namespace

void add_global_flags(CLI::App& app) {
  GlobalFlags& f = flags();
  app.add_flag("-s,--silent", f.silent, "Only print errors");
  app.add_flag("-q,--quiet", f.quiet, "Suppress normal output (errors and warnings only; no progress)");
  app.add_flag("-v,--verbose", f.verbose, "Print additional information");
  app.add_flag("-d,--debug", f.debug, "Print debugging information (highest verbosity)");
  app.add_flag("--nocolor", f.nocolor, "Print without colour (capsa never colours its output)");
  app.add_option("-c,--config", f.config,
                 "Use this configuration file (apptainer.conf syntax) instead of the administrator's capsa.conf; "
                 "for anyone but root it cannot loosen the administrator's restrictions (also CAPSA_CONFIG)")
      ->type_name("FILE");
  app.add_flag("--build-config", f.build_config,
               "Use the configuration for building containers: Apptainer's defaults without the default binds, "
               "resolv.conf, home and devpts (anyone but root keeps the administrator's restrictions)");
  // The configuration is read before any command runs, as Apptainer does: a malformed
  // file stops every command, and its warnings come once.
  app.parse_complete_callback([] {
    apply(flags());
    site_config();
  });
}

bool quiet_output() { return flags().quiet || flags().silent; }

const std::string& config_flag() { return flags().config; }

bool build_config_flag() { return flags().build_config; }

std::size_t global_flag_words(const std::vector<std::string>& args) {
  std::size_t i = 0;
  while (i < args.size()) {
    const std::string& arg = args[i];
    if (arg == "-c" || arg == "--config") {  // and its value
      i += 2;
    } else if (arg.rfind("--config=", 0) == 0 || arg == "-s" || arg == "--silent" || arg == "-q" || arg == "--quiet" ||
               arg == "-v" || arg == "--verbose" || arg == "-d" || arg == "--debug" || arg == "--nocolor" ||
               arg == "--build-config") {
      ++i;
    } else {
      break;
    }
  }
  return std::min(i, args.size());
}

}  // namespace capsa::cli
