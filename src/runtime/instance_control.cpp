// `capsa instance list|stop|stats`, over the records of instance_state.hpp.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/instance.hpp"
#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

// Go's text/tabwriter as Apptainer sets it up (minwidth 0, padding 4, spaces): every
// tab-terminated cell is padded to its column's widest cell plus 4.
std::string tabulate(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i + 1 < row.size(); ++i) {
      if (widths.size() <= i) widths.resize(i + 1, 0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out.append(widths[i] + 4 - row[i].size(), ' ');
    }
    out += "\n";
  }
  return out;
}

bool wait_for_exit(int pidfd, std::chrono::milliseconds timeout) {
  pollfd p{pidfd, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (n > 0) return true;
    if (n == 0) return false;
  }
}

UniqueFd pidfd_of(pid_t pid, std::uint64_t start_time) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  // Opened first, checked after: the pidfd then refers to the process that was checked.
  if (fd && process_start_time(pid) != start_time) fd.reset();
  return fd;
}

struct ProcessFigures {
  std::uint64_t cpu_ticks = 0;  // user + system time
  std::uint64_t rss_bytes = 0;
  std::uint64_t read_bytes = 0, write_bytes = 0;
  int count = 0;
};

// The sums over every process in the PID namespace of `pid` (the instance's init).
ProcessFigures namespace_figures(pid_t pid) {
  ProcessFigures figures;
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", error);
  if (error) return figures;
  const long page = ::sysconf(_SC_PAGESIZE);
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string id = entry.path().filename();
    if (id.empty() || !std::all_of(id.begin(), id.end(), ::isdigit)) continue;
    std::error_code missing;
    if (std::filesystem::read_symlink(entry.path() / "ns/pid", missing) != target || missing) continue;
    std::ifstream stat_file(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)), std::istream_iterator<std::string>());
    if (f.size() < 22) continue;
    figures.cpu_ticks += std::stoull(f[11]) + std::stoull(f[12]);                // utime, stime (fields 14, 15)
    figures.rss_bytes += std::stoull(f[21]) * static_cast<std::uint64_t>(page);  // rss (field 24)
    std::ifstream io(entry.path() / "io");
    std::string key;
    std::uint64_t value = 0;
    while (io >> key >> value) {
      if (key == "read_bytes:") figures.read_bytes += value;
      if (key == "write_bytes:") figures.write_bytes += value;
    }
    ++figures.count;
  }
  return figures;
}

std::uint64_t memory_total() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    meminfo.ignore(1 << 10, '\n');
  }
  return 0;
}

// Docker's units.BytesSize, as Apptainer prints sizes: 1024-based, 4 significant digits.
std::string bytes_size(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g%s", bytes, units[unit]);
  return buf;
}

}  // namespace

int parse_signal(const std::string& text) {
  static const std::pair<const char*, int> names[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CONT", SIGCONT}, {"STOP", SIGSTOP}};
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    const int number = std::atoi(text.c_str());
    if (number > 0 && number < NSIG) return number;
  }
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.starts_with("SIG")) upper = upper.substr(3);
  for (const auto& [name, number] : names)
    if (upper == name) return number;
  throw Error("--signal " + text + ": not a signal (give a name such as SIGTERM, TERM, or a number)");
}

void list_instances(const std::string& glob, ListFormat format, const std::string& user) {
  const std::vector<InstanceRecord> records = InstanceStore::for_user(user).list(glob);
  if (format == ListFormat::json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const InstanceRecord& r : records)
      list.push_back({{"instance", r.name},
                      {"pid", r.pid},
                      {"img", r.image},
                      {"ip", r.ip},
                      {"logErrPath", r.log_err},
                      {"logOutPath", r.log_out}});
    nlohmann::ordered_json out = {{"instances", list}};
    std::cout << out.dump(1, '\t') << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  if (format == ListFormat::logs) {
    rows.push_back({"INSTANCE NAME", "PID", "LOGS"});
    for (const InstanceRecord& r : records) {
      rows.push_back({r.name, std::to_string(r.pid), r.log_err});
      rows.push_back({"", "", r.log_out});
    }
  } else {
    rows.push_back({"INSTANCE NAME", "PID", "IP", "IMAGE"});
    for (const InstanceRecord& r : records) rows.push_back({r.name, std::to_string(r.pid), r.ip, r.image});
  }
  std::cout << tabulate(rows);
}

void stop_instances(const std::string& glob, int signal, std::chrono::milliseconds timeout, const std::string& user) {
  InstanceStore store = InstanceStore::for_user(user);
  const std::vector<InstanceRecord> records = store.list(glob);
  if (records.empty())
    throw Error(glob == "*" ? std::string("no instance found")
                            : "no instance named " + glob + " (see `capsa instance list`)");
  stop_records(store, records, signal, timeout, true);
}

void stop_records(const InstanceStore& store, const std::vector<InstanceRecord>& records, int signal,
                  std::chrono::milliseconds timeout, bool say) {
  struct Stopping {
    const InstanceRecord* record;
    UniqueFd init, monitor;
  };
  std::vector<Stopping> stopping;
  for (const InstanceRecord& r : records) {
    Stopping s{&r, pidfd_of(r.pid, r.start_time), pidfd_of(r.monitor, r.monitor_start_time)};
    if (!s.init) continue;  // ended meanwhile
    if (say) log::info({"Stopping ", r.name, " instance of ", r.image, " (PID=", std::to_string(r.pid), ")"});
    if (::syscall(SYS_pidfd_send_signal, s.init.get(), signal, nullptr, 0) != 0)
      throw_errno("sending signal " + std::to_string(signal) + " to instance " + r.name);
    stopping.push_back(std::move(s));
  }
  // All of them get the grace at once, as Apptainer's stop does.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (Stopping& s : stopping) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!wait_for_exit(s.init.get(), std::max(left, std::chrono::milliseconds(0)))) {
      log::info({"Killing ", s.record->name, " instance of ", s.record->image, " (PID=", std::to_string(s.record->pid),
                 ") (Timeout)"});
      ::syscall(SYS_pidfd_send_signal, s.init.get(), SIGKILL, nullptr, 0);
      wait_for_exit(s.init.get(), std::chrono::seconds(10));
    }
    // The monitor follows its init, and with it the FUSE server and the mount namespace.
    if (s.monitor) wait_for_exit(s.monitor.get(), std::chrono::seconds(10));
    store.remove_if(s.record->name, s.record->pid);
  }
}

void print_instance_stats(const std::string& name, bool json, const std::string& user) {
  check_instance_name(name);
  std::optional<InstanceRecord> record = InstanceStore::for_user(user).find(name);
  if (!record) throw Error("no instance named " + name + " (see `capsa instance list`)");
  // capsa puts an instance in no cgroup of its own (the job's or the session's holds
  // more than the instance), so the figures are sums over the processes of its PID
  // namespace from /proc, CPU over one second as Apptainer's.
  const ProcessFigures first = namespace_figures(record->pid);
  const auto t0 = std::chrono::steady_clock::now();
  ::usleep(1'000'000);
  const ProcessFigures second = namespace_figures(record->pid);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double cpu_percent = second.cpu_ticks >= first.cpu_ticks
                                 ? static_cast<double>(second.cpu_ticks - first.cpu_ticks) / ticks / seconds * 100.0
                                 : 0.0;
  const std::uint64_t limit = memory_total();
  const double mem_percent = limit ? 100.0 * static_cast<double>(second.rss_bytes) / static_cast<double>(limit) : 0.0;
  if (json) {
    nlohmann::ordered_json out = {{"source", "proc"},
                                  {"instance", record->name},
                                  {"pid", record->pid},
                                  {"cpu_percent", cpu_percent},
                                  {"cpu_total_seconds", static_cast<double>(second.cpu_ticks) / ticks},
                                  {"memory_usage_bytes", second.rss_bytes},
                                  {"memory_limit_bytes", limit},
                                  {"memory_percent", mem_percent},
                                  {"block_read_bytes", second.read_bytes},
                                  {"block_write_bytes", second.write_bytes},
                                  {"pids", second.count}};
    std::cout << out.dump(1, '\t') << "\n";
    return;
  }
  log::info({"Stats for ", record->name, " instance of ", record->image, " (PID=", std::to_string(record->pid),
             "), summed over its processes from /proc"});
  char cpu[32], mem[32];
  std::snprintf(cpu, sizeof cpu, "%.2f%%", cpu_percent);
  std::snprintf(mem, sizeof mem, "%.2f%%", mem_percent);
  std::cout << tabulate(
      {{"INSTANCE NAME", "CPU USAGE", "MEM USAGE / LIMIT", "MEM %", "BLOCK I/O", "PIDS"},
       {record->name, cpu,
        bytes_size(static_cast<double>(second.rss_bytes)) + " / " + bytes_size(static_cast<double>(limit)), mem,
        bytes_size(static_cast<double>(second.read_bytes)) + " / " +
            bytes_size(static_cast<double>(second.write_bytes)),
        std::to_string(second.count)}});
}

}  // namespace capsa::runtime
