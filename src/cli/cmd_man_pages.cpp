// `capsa man-pages DIR` (hidden): writes capsa.1, capsa-exec.1, capsa-sif-add.1, ... from
// the command-line definition itself (command_tree.hpp), so the pages say what --help
// says. The build runs it and `cmake --install` installs the pages (src/cli/CMakeLists.txt).
#include <filesystem>
#include <fstream>

#include "capsa/version.hpp"
#include "cli/command_tree.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"

namespace capsa::cli {
namespace {

// Text for roff: backslashes and hyphens escaped, a line that would start with a control
// character ('.' or '\'') protected.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string page_name(const std::vector<std::string>& path) {
  std::string name = "capsa";
  for (const std::string& word : path) name += "-" + word;
  return name;
}

std::string spaced(const std::vector<std::string>& path) {
  std::string out = "capsa";
  for (const std::string& word : path) out += " " + word;
  return out;
}

// A description as a sentence: the program's own leading "capsa: " dropped (NAME already
// says it), a final full stop added where it has none.
std::string sentence(std::string text) {
  if (text.rfind("capsa: ", 0) == 0) text.erase(0, 7);
  if (!text.empty() && text.back() != '.') text += '.';
  return text;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

void write_page(const std::filesystem::path& dir, const CommandInfo& command) {
  const std::string name = page_name(command.path);
  std::ofstream out(dir / (name + ".1"));
  out << ".TH " << upper(name) << " 1 \"\" \"capsa " << build_info::version << "\" \"capsa manual\"\n"
      << ".SH NAME\n"
      << roff(name) << " \\- " << roff(sentence(command.description)) << "\n"
      << ".SH SYNOPSIS\n"
      << ".B " << roff(spaced(command.path)) << "\n"
      << (command.subcommands.empty() ? "[\\fIFLAGS\\fR] [\\fIARGS\\fR...]\n"
                                      : "[\\fIFLAGS\\fR] \\fICOMMAND\\fR ...\n");
  if (!command.footer.empty()) {
    out << ".SH DESCRIPTION\n";
    for (std::size_t start = 0; start < command.footer.size();) {
      std::size_t end = command.footer.find('\n', start);
      if (end == std::string::npos) end = command.footer.size();
      std::string line = command.footer.substr(start, end - start);
      if (!line.empty()) out << roff(line) << "\n.br\n";
      start = end + 1;
    }
  }
  if (!command.subcommands.empty()) {
    out << ".SH COMMANDS\n";
    for (const CommandInfo& sub : command.subcommands)
      out << ".TP\n.B " << roff(sub.path.back()) << "\n"
          << roff(sentence(sub.description)) << " See \\fB" << roff(page_name(sub.path)) << "\\fR(1).\n";
  }
  if (!command.flags.empty()) {
    out << ".SH FLAGS\n";
    for (const FlagInfo& flag : command.flags) {
      out << ".TP\n";
      for (std::size_t i = 0; i < flag.names.size(); ++i)
        out << (i == 0 ? "\\fB" : ", \\fB") << roff(flag.names[i]) << "\\fR";
      if (!flag.value.empty()) out << " \\fI" << flag.value << "\\fR";
      out << "\n" << roff(flag.description) << "\n";
    }
  }
  out << ".SH SEE ALSO\n"
      << (command.path.empty() ? "" : "\\fBcapsa\\fR(1), ")
      << "the documentation in docs/ of the source, capsa.md first.\n";
  if (!out) throw Error("cannot write " + (dir / (name + ".1")).string());
  for (const CommandInfo& sub : command.subcommands) write_page(dir, sub);
}

}  // namespace

void add_man_pages_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("man-pages", "Write the man pages (capsa.1, capsa-exec.1, ...) into DIR");
  cmd->group("");  // for the build, not for users
  cmd->add_option("dir", *dir, "Directory to write the pages in")->required();
  cmd->callback([&app, dir] {
    std::filesystem::create_directories(*dir);
    write_page(*dir, describe_commands(app));
  });
}

}  // namespace capsa::cli
