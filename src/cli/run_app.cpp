#include "cli/run_app.hpp"

#include <cstdio>

#include "util/error.hpp"

namespace capsa::cli {

int run_app(CLI::App& app, const Invocation& inv) {
  std::vector<std::string> reversed(inv.args.rbegin(), inv.args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A usage error: one line, and Apptainer's exit status for it (1), so that a job
    // script that checks for failure sees the same as before.
    std::fprintf(stderr, "%s: error: %s (see `%s --help`)\n", inv.program_name.c_str(), e.what(),
                 inv.program_name.c_str());
    return 1;
  } catch (const capsa::StatusError& e) {  // an error with an exit status of its own (127: no such command)
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", inv.program_name.c_str(), e.what());
    return e.status();
  } catch (const capsa::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", inv.program_name.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: internal error: %s\n", inv.program_name.c_str(), e.what());
    return 1;
  }
  return 0;
}

}  // namespace capsa::cli
