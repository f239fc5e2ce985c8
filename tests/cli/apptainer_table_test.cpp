// Walks tests/cli/apptainer-1.4-commands.tsv, the list of every command and flag of
// Apptainer 1.4, so that none can silently regress: an implemented row must be a flag
// capsa's help lists, proven by a test that exists; a refused row must stop capsa with
// one line that says so, before any image is looked up.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/process.hpp"
#include "support/test_env.hpp"

namespace capsa::cli {
namespace {

using test::run_process;

struct Row {
  int line = 0;
  std::vector<std::string> commands;  // "global" for flags before the command
  std::string flag;                   // "-" for the command itself
  std::string status;
  std::string evidence;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Row> table() {
  std::ifstream in(std::string(CAPSA_SOURCE_DIR) + "/tests/cli/apptainer-1.4-commands.tsv");
  std::vector<Row> rows;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    auto columns = split(line, '\t');
    EXPECT_EQ(columns.size(), 5u) << "line " << number << ": " << line;
    if (columns.size() != 5) continue;
    rows.push_back({number, split(columns[0], ','), columns[1], columns[3], columns[4]});
  }
  return rows;
}

// "-s,--silent" -> "--silent"
std::string long_name(const std::string& flag) { return flag.substr(flag.rfind(',') + 1); }

std::string where(const Row& row) { return "table line " + std::to_string(row.line) + " (" + row.flag + ")"; }

void check_evidence(const Row& row) {
  auto colon = row.evidence.find(':');
  ASSERT_NE(colon, std::string::npos) << where(row) << ": evidence must be FILE:TestName";
  std::string file = row.evidence.substr(0, colon), test_name = row.evidence.substr(colon + 1);
  std::string source = read_text(std::string(CAPSA_SOURCE_DIR) + "/" + file);
  ASSERT_FALSE(source.empty()) << where(row) << ": no test file " << file;
  EXPECT_NE(source.find(", " + test_name + ")"), std::string::npos)
      << where(row) << ": no test " << test_name << " in " << file;
}

// `capsa help COMMAND [SUBCOMMAND]`: a subcommand's row names it as "registry login".
std::vector<std::string> help_for(const std::string& command) {
  std::vector<std::string> args = {test::capsa_binary(), "help"};
  for (const std::string& word : split(command, ' ')) args.push_back(word);
  return args;
}

void check_implemented(const Row& row, const std::string& command) {
  check_evidence(row);
  if (row.flag == "-") {
    auto help = run_process(help_for(command));
    EXPECT_EQ(help.exit_code, 0) << where(row) << ": " << help.err;
    return;
  }
  auto help = command == "global" ? run_process({test::capsa_binary(), "--help"}) : run_process(help_for(command));
  // CLI11 lists "-s,--silent" or "--silent TEXT": the long name followed by a blank or comma.
  const std::string name = long_name(row.flag);
  bool listed = false;
  for (std::size_t at = help.out.find(name); at != std::string::npos; at = help.out.find(name, at + 1)) {
    char after = at + name.size() < help.out.size() ? help.out[at + name.size()] : '\n';
    char before = at > 0 ? help.out[at - 1] : ' ';
    if ((after == ' ' || after == ',' || after == '\n') && (before == ' ' || before == ',')) listed = true;
  }
  EXPECT_TRUE(listed) << where(row) << ": `capsa help " << command << "` does not list " << name;
}

void check_refused(const Row& row, const std::string& command) {
  const std::string missing = "/nonexistent/apptainer-table.sif";
  std::vector<std::string> args = {test::capsa_binary()};
  const std::vector<std::string> words = split(command, ' ');
  if (row.flag == "-") {
    args.insert(args.end(), words.begin(), words.end());
  } else if (command == "global") {
    args.insert(args.end(), {long_name(row.flag), "value", "exec", missing, "true"});
  } else {
    // "value" is the flag's value, or (for a flag without one) taken for the image: the
    // refusal must come first either way.
    args.insert(args.end(), words.begin(), words.end());
    args.insert(args.end(), {long_name(row.flag), "value", missing, "true"});
  }
  auto result = run_process(args);
  EXPECT_EQ(result.exit_code, 1) << where(row) << " " << command << ": " << result.err;
  EXPECT_EQ(result.out, "") << where(row);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << where(row) << ": " << result.err;
  EXPECT_EQ(result.err.find(missing), std::string::npos) << where(row) << ": the image was looked up: " << result.err;
  const std::string said = row.flag == "-" ? "'" + command + "'" : long_name(row.flag);
  EXPECT_NE(result.err.find(said), std::string::npos) << where(row) << ": " << result.err;
  EXPECT_TRUE(result.err.find("is not supported") != std::string::npos ||
              result.err.find("is not implemented") != std::string::npos)
      << where(row) << ": " << result.err;
}

TEST(ApptainerTable, EveryCommandAndFlagIsImplementedOrRefusedInOneLine) {
  std::vector<Row> rows = table();
  ASSERT_GT(rows.size(), 150u) << "the table was not found or lost rows";
  for (const Row& row : rows) {
    ASSERT_TRUE(row.status == "implemented" || row.status == "refused") << where(row) << ": status " << row.status;
    for (const std::string& command : row.commands) {
      if (row.status == "implemented")
        check_implemented(row, command);
      else
        check_refused(row, command);
    }
  }
}

}  // namespace
}  // namespace capsa::cli
