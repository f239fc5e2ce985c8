#include "util/tab_columns.hpp"

#include <algorithm>

namespace capsa {

void TabColumns::add(std::vector<std::string> cells, std::string tail) {
  lines_.push_back({std::move(cells), std::move(tail)});
}

// Go's tabwriter.format: each run of lines with a cell in `column` gets one width, then
// the run is laid out for the next column.
void TabColumns::layout(std::vector<std::vector<std::size_t>>& widths, std::size_t begin, std::size_t end,
                        std::size_t column) const {
  for (std::size_t i = begin; i < end;) {
    if (lines_[i].cells.size() <= column) {
      ++i;
      continue;
    }
    std::size_t j = i, width = 0;
    for (; j < end && lines_[j].cells.size() > column; ++j) width = std::max(width, lines_[j].cells[column].size() + 2);
    for (std::size_t k = i; k < j; ++k) widths[k][column] = width;
    layout(widths, i, j, column + 1);
    i = j;
  }
}

std::string TabColumns::str() const {
  std::vector<std::vector<std::size_t>> widths;
  widths.reserve(lines_.size());
  for (const auto& line : lines_) widths.emplace_back(line.cells.size(), 0);
  layout(widths, 0, lines_.size(), 0);
  std::string out;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    for (std::size_t c = 0; c < lines_[i].cells.size(); ++c) {
      out += lines_[i].cells[c];
      out.append(widths[i][c] - lines_[i].cells[c].size(), ' ');
    }
    out += lines_[i].tail + "\n";
  }
  return out;
}

}  // namespace capsa
