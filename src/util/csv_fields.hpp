#pragma once
// Comma-separated lists read by the rules of Go's encoding/csv Reader with its defaults
// (Comma ',', LazyQuotes false, TrimLeadingSpace false, no comment character): the reader
// behind Apptainer's --mount and behind pflag's key=value flags (--env).
//   - Fields are separated by commas, records by newlines ("\r\n" counts as "\n"); lines
//     that are empty are skipped.
//   - A field that begins with a double quote is quoted: it may hold commas and newlines,
//     `""` in it is one quote, and its closing quote must be followed by a comma or the
//     end of the record.
//   - A double quote anywhere else in a field is an error; spaces are kept as they are.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace capsa {

using CsvRecord = std::vector<std::string>;

// The first record of `text`, as csv.Reader.Read returns it (what follows is not read);
// nullopt when `text` holds none (only empty lines). Throws FormatError saying where.
std::optional<CsvRecord> read_csv_record(std::string_view text);

// Every record of `text`, as csv.Reader.ReadAll: each must have as many fields as the
// first. Throws FormatError saying where.
std::vector<CsvRecord> read_csv_records(std::string_view text);

}  // namespace capsa
