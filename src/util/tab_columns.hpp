#pragma once
// Columns laid out as Go's text/tabwriter lays them out (padding 2, no minimum width),
// which Apptainer prints its tables with: a column is as wide as its widest cell among
// the consecutive lines that have a cell in it, so a line with fewer cells (a blank line)
// starts new columns below it.
#include <cstddef>
#include <string>
#include <vector>

namespace capsa {

class TabColumns {
 public:
  // One line: its cells (what Go ends with '\t'), then the rest of the line.
  void add(std::vector<std::string> cells, std::string tail = "");
  std::string str() const;

 private:
  struct Line {
    std::vector<std::string> cells;
    std::string tail;
  };
  void layout(std::vector<std::vector<std::size_t>>& widths, std::size_t begin, std::size_t end,
              std::size_t column) const;
  std::vector<Line> lines_;
};

}  // namespace capsa
