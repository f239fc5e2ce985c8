// Fuzzes the bind specifications a user or a job script hands capsa: -B lists, --mount
// and APPTAINER_BIND/SINGULARITY_BINDPATH. Any text must either be refused with
// capsa::Error or give binds with absolute destinations, and a parsed -B list written
// back in the -B syntax (APPTAINER_BIND for nested runs) must parse to the same binds.
// The CSV reader under --mount and --env (util/csv_fields.hpp) is held to its own
// promises: the first of all records is the one record read alone, and records without
// carriage returns written back with every field quoted read back the same.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/bind_spec.hpp"
#include "util/csv_fields.hpp"
#include "util/error.hpp"

namespace {

void check_destinations(const std::vector<capsa::runtime::BindSpec>& binds) {
  for (const auto& bind : binds)
    if (bind.destination.empty() || bind.destination[0] != '/' || bind.source.empty()) std::abort();
}

void check_csv(std::string_view text) {
  std::vector<capsa::CsvRecord> records;
  try {
    records = capsa::read_csv_records(text);
  } catch (const capsa::FormatError&) {
    return;
  }
  std::optional<capsa::CsvRecord> first = capsa::read_csv_record(text);
  if (records.empty() != !first || (first && *first != records.front())) std::abort();
  std::string written;
  for (const capsa::CsvRecord& record : records) {
    for (std::size_t i = 0; i < record.size(); ++i) {
      if (record[i].find('\r') != std::string::npos) return;  // "\r\n" inside quotes reads as "\n"
      written += i == 0 ? "\"" : ",\"";
      for (char c : record[i]) written += c == '"' ? std::string("\"\"") : std::string(1, c);
      written += '"';
    }
    written += '\n';
  }
  if (capsa::read_csv_records(written) != records) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto binds = runtime::parse_bind_list(text);
    check_destinations(binds);
    if (runtime::parse_bind_list(runtime::format_bind_list(binds)) != binds) std::abort();
  } catch (const capsa::Error&) {
  }
  try {
    check_destinations(runtime::parse_mount(text));
  } catch (const capsa::Error&) {
  }
  check_csv(text);
  try {
    check_destinations(runtime::binds_from_environment({{"APPTAINER_BINDPATH", std::string(text)},
                                                        {"SINGULARITY_BIND", std::string(text)}}));
  } catch (const capsa::Error&) {
  }
  return 0;
}
