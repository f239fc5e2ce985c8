#include "util/csv_fields.hpp"

namespace capsa {
namespace {

std::size_t newline_length(std::string_view s) { return !s.empty() && s.back() == '\n' ? 1 : 0; }

class CsvReader {
 public:
  explicit CsvReader(std::string_view text) : text_(text), one_line_(text.find('\n') == std::string_view::npos) {}

  std::optional<CsvRecord> next() {
    do {
      if (!read_line()) return std::nullopt;
    } while (line_.size() == newline_length(line_));  // empty lines are skipped
    record_line_ = line_number_;
    CsvRecord record;
    std::string_view rest = line_;
    std::size_t column = 1;  // of rest[0], counted in bytes from 1, as Go counts
    for (;;) {
      if (rest.empty() || rest[0] != '"') {
        const std::size_t comma = rest.find(',');
        std::string_view field = rest.substr(0, comma == std::string_view::npos ? rest.size() - newline_length(rest) : comma);
        if (std::size_t quote = field.find('"'); quote != std::string_view::npos)
          fail(line_number_, column + quote,
               "a double quote in an unquoted field (quote the whole field, and double each quote inside it)");
        record.emplace_back(field);
        if (comma == std::string_view::npos) return record;
        rest.remove_prefix(comma + 1);
        column += comma + 1;
        continue;
      }
      // A quoted field, which may go on over several lines.
      const int open_line = line_number_;
      const std::size_t open_column = column;
      std::string field;
      rest.remove_prefix(1);
      ++column;
      for (;;) {
        if (std::size_t quote = rest.find('"'); quote != std::string_view::npos) {
          field.append(rest.substr(0, quote));
          rest.remove_prefix(quote + 1);
          column += quote + 1;
          if (!rest.empty() && rest[0] == '"') {  // "" is one quote
            field += '"';
            rest.remove_prefix(1);
            ++column;
            continue;
          }
          if (!rest.empty() && rest[0] == ',') {
            rest.remove_prefix(1);
            ++column;
            break;
          }
          if (rest.size() == newline_length(rest)) {
            record.push_back(std::move(field));
            return record;
          }
          fail(line_number_, column - 1,
               "text after the closing double quote of a quoted field (a quote inside one is written \"\")");
        }
        if (rest.empty()) fail(open_line, open_column, "the double quote that opens this field is never closed");
        field.append(rest);
        rest = read_line() ? std::string_view(line_) : std::string_view();
        column = 1;
      }
      record.push_back(std::move(field));
    }
  }

  int record_line() const { return record_line_; }

  [[noreturn]] void fail(int line, std::size_t column, const std::string& why) const {
    std::string where = "column " + std::to_string(column);
    if (!one_line_) where = "line " + std::to_string(line) + ", " + where;
    throw FormatError(where + ": " + why);
  }

 private:
  // The next line with its "\n", as Go reads it: "\r\n" becomes "\n", and a "\r" that ends
  // the text is dropped.
  bool read_line() {
    if (offset_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', offset_);
    end = end == std::string_view::npos ? text_.size() : end + 1;
    line_.assign(text_.substr(offset_, end - offset_));
    offset_ = end;
    ++line_number_;
    if (line_.ends_with("\r\n")) line_.erase(line_.size() - 2, 1);
    else if (line_.ends_with('\r')) line_.pop_back();
    return true;
  }

  std::string_view text_;
  bool one_line_;
  std::size_t offset_ = 0;
  int line_number_ = 0;
  int record_line_ = 0;
  std::string line_;
};

}  // namespace

std::optional<CsvRecord> read_csv_record(std::string_view text) { return CsvReader(text).next(); }

std::vector<CsvRecord> read_csv_records(std::string_view text) {
  CsvReader reader(text);
  std::vector<CsvRecord> records;
  while (std::optional<CsvRecord> record = reader.next()) {
    if (!records.empty() && record->size() != records.front().size())
      throw FormatError("line " + std::to_string(reader.record_line()) + " has " + std::to_string(record->size()) +
                        " fields where the first has " + std::to_string(records.front().size()));
    records.push_back(std::move(*record));
  }
  return records;
}

}  // namespace capsa
