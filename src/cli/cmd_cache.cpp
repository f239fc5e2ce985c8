// `capsa cache list|clean`: the cache that pulls fill, with the flags and the output
// of `apptainer cache`. Types are capsa's (blob, sif) or Apptainer's names for the
// same things (blob, oci), plus `all`.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "runtime/kept_image.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

// "2.01 MiB": Apptainer's cache sizes, two decimals in binary units.
std::string cache_size(std::uint64_t bytes) {
  const char* unit = "KiB";
  double value = static_cast<double>(bytes) / 1024;
  if (value >= 1024) value /= 1024, unit = "MiB";
  if (value >= 1024) value /= 1024, unit = "GiB";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %s", value, unit);
  return text;
}

std::string local_time(std::time_t when) {
  std::tm parts{};
  ::localtime_r(&when, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  return text;
}

std::vector<cache::EntryType> parse_types(const std::vector<std::string>& names) {
  std::vector<cache::EntryType> types;
  for (const std::string& name : names) {
    if (name == "all") return {};
    auto type = cache::parse_type(name);
    if (!type) throw Error("unknown cache type \"" + name + "\"; use blob, sif or all (Apptainer's oci means sif)");
    types.push_back(*type);
  }
  return types;
}

bool selected(const std::vector<cache::EntryType>& types, cache::EntryType type) {
  return types.empty() || std::find(types.begin(), types.end(), type) != types.end();
}

std::string shown_name(const cache::Entry& entry) { return entry.name + (entry.partial ? " (partial)" : ""); }

void print_list(const cache::Cache& cache, const std::vector<cache::EntryType>& types, bool verbose) {
  std::vector<cache::Entry> entries = cache.list();
  std::erase_if(entries, [&](const cache::Entry& e) { return !selected(types, e.type); });
  if (verbose) {
    int width = 24;
    for (const auto& e : entries) width = std::max(width, static_cast<int>(shown_name(e).size()));
    std::printf("%-*s %-21s %-21s %-12s %s\n", width, "NAME", "DATE CREATED", "LAST USED", "SIZE", "TYPE");
    for (const auto& e : entries)
      std::printf("%-*s %-21s %-21s %-12s %s\n", width, shown_name(e).c_str(), local_time(e.created).c_str(),
                  local_time(e.last_used).c_str(), cache_size(e.size).c_str(), std::string(type_name(e.type)).c_str());
    std::printf("\n");
  }
  std::uint64_t sif_bytes = 0, blob_bytes = 0;
  std::size_t sifs = 0, blobs = 0;
  for (const auto& e : entries) {
    bool sif = e.type == cache::EntryType::sif;
    (sif ? sifs : blobs) += 1;
    (sif ? sif_bytes : blob_bytes) += e.size;
  }
  std::printf("There are %zu container file(s) using %s and %zu oci blob file(s) using %s of space\n", sifs,
              cache_size(sif_bytes).c_str(), blobs, cache_size(blob_bytes).c_str());
  std::printf("Total space used: %s\n", cache_size(sif_bytes + blob_bytes).c_str());
}

// Apptainer asks before cleaning; a job script or a pipe cannot answer, and reading a
// stdin that nobody writes (srun's) would hang, so anything but a terminal means no.
bool confirmed(const cache::CleanOptions& options) {
  std::string what = options.types.empty() && !options.days
                         ? "everything in your cache (containers and OCI blobs)"
                         : "the selected entries of your cache";
  std::fprintf(stderr, "This will delete %s.\n", what.c_str());
  if (!::isatty(STDIN_FILENO)) {
    std::fprintf(stderr, "Standard input is not a terminal, so there is no one to confirm: nothing removed. "
                         "Add --force to clean without asking.\n");
    return false;
  }
  std::fprintf(stderr, "Hint: You can see exactly what would be deleted by canceling and using the --dry-run option.\n"
                       "Do you want to continue? [N/y] ");
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

void print_clean_report(const cache::CleanReport& report, bool dry_run) {
  for (const auto& e : report.removed)
    std::printf("%s %s %s (%s)\n", dry_run ? "Would remove" : "Removed", std::string(type_name(e.type)).c_str(),
                shown_name(e).c_str(), cache_size(e.size).c_str());
  for (const auto& e : report.in_use)
    log::warning({"kept ", type_name(e.type), " ", shown_name(e), ": another process is using or producing it"});
  std::printf("%s %zu entr%s, %s\n", dry_run ? "Would remove" : "Removed", report.removed.size(),
              report.removed.size() == 1 ? "y" : "ies", cache_size(report.removed_bytes).c_str());
}

struct CleanFlags {
  std::optional<int> days;
  std::vector<std::string> types;
  bool dry_run = false;
  bool force = false;
};

void add_list(CLI::App& cache_cmd) {
  auto types = std::make_shared<std::vector<std::string>>();
  auto verbose = std::make_shared<bool>(false);
  auto* cmd = cache_cmd.add_subcommand("list", "List the cached images and blobs, and the space they use");
  cmd->add_option("-T,--type", *types, "Only these types: blob, sif, all (repeat or comma-separate)")->delimiter(',');
  cmd->add_flag("-v,--verbose", *verbose, "One line per entry: name, creation, last use, size, type");
  cmd->callback([=] { print_list(cache::Cache::open_default(), parse_types(*types), *verbose); });
}

void add_clean(CLI::App& cache_cmd) {
  auto flags = std::make_shared<CleanFlags>();
  auto* cmd = cache_cmd.add_subcommand("clean", "Remove cached images and blobs (asks first unless --force)");
  cmd->add_option("-D,--days", flags->days, "Only entries not used for at least this many days")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-T,--type", flags->types, "Only these types: blob, sif, all (repeat or comma-separate)")
      ->delimiter(',');
  cmd->add_flag("-n,--dry-run", flags->dry_run, "Show what would be removed, remove nothing");
  cmd->add_flag("-f,--force", flags->force, "Do not ask for confirmation");
  cmd->footer("Entries that another process is producing or using are kept, with a warning.");
  cmd->callback([flags] {
    cache::CleanOptions options{flags->days, parse_types(flags->types), flags->dry_run};
    cache::Cache cache = cache::Cache::open_default();
    if (!options.dry_run && !flags->force && !confirmed(options)) return;
    print_clean_report(cache.clean(options), options.dry_run);
    // The images kept mounted between containers (runtime/kept_image.hpp) go too.
    if (!options.dry_run) runtime::release_kept_images();
  });
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("cache", "Manage the local cache of pulled images and blobs");
  cmd->require_subcommand(1);
  cmd->footer("Location: $CAPSA_CACHEDIR, else $APPTAINER_CACHEDIR/cache/capsa, else "
              "$SINGULARITY_CACHEDIR/cache/capsa, else ~/.capsa/cache (docs/cache.md).");
  add_list(*cmd);
  add_clean(*cmd);
}

}  // namespace capsa::cli
