#include "convert_fixture.hpp"

#include <fcntl.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "squashfs/reader.hpp"
#include "support/process.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::convert::test {

using capsa::test::run_process;

std::string ConvertTest::layer(const std::vector<Entry>& entries, const std::string& compression,
                               const std::string& format) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries) {
    nlohmann::json j{{"name", e.name}, {"type", e.type}, {"data", e.data}, {"uid", e.uid},
                     {"gid", e.gid},   {"target", e.target}};
    if (e.mode >= 0) j["mode"] = e.mode;
    if (!e.xattrs.empty()) j["xattrs"] = e.xattrs;
    if (!e.name_hex.empty()) j["name_hex"] = e.name_hex;
    list.push_back(j);
  }
  std::string path = dir_ / ("layer" + std::to_string(++layers_made_) + "." + compression);
  auto result = run_process({"/usr/bin/python3", CAPSA_MAKE_LAYER, path, compression, format}, list.dump());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return path;
}

ConversionResult ConvertTest::convert(const std::vector<std::string>& layer_paths,
                                      const std::vector<ExtraEntry>& extras, const ConvertOptions& options) {
  std::vector<LayerInput> inputs;
  for (const auto& p : layer_paths) inputs.push_back({p, std::nullopt, p.substr(p.rfind('/') + 1)});
  return layers_to_squashfs(inputs, extras, output_, options);
}

std::map<std::string, std::string> ConvertTest::describe() const {
  auto result = run_process({"rdsquashfs", "--describe", output_});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::map<std::string, std::string> entries;
  std::istringstream lines(result.out);
  std::string type, path, rest;
  while (lines >> type >> path) {
    std::getline(lines, rest);
    entries[path] = type + rest;
  }
  return entries;
}

std::optional<std::string> ConvertTest::read(const std::string& path) const {
  UniqueFd fd = open_file(output_, O_RDONLY);
  squashfs::Reader reader(fd.get(), 0, file_size(fd.get()), output_);
  return reader.read_file(path);
}

std::vector<std::string> ConvertTest::list(const std::string& path) const {
  UniqueFd fd = open_file(output_, O_RDONLY);
  squashfs::Reader reader(fd.get(), 0, file_size(fd.get()), output_);
  return reader.list_directory(path).value_or(std::vector<std::string>{});
}

std::pair<int, int> ConvertTest::inode_and_links(const std::string& path) const {
  auto result = run_process({"rdsquashfs", "--stat", path, output_});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto field = [&](const std::string& name) {
    auto at = result.out.find(name + ": ");
    return at == std::string::npos ? -1 : std::stoi(result.out.substr(at + name.size() + 2));
  };
  return {field("Inode number"), field("Hard link count")};
}

bool contains_line_with(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
  for (const auto& line : lines)
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  return false;
}

}  // namespace capsa::convert::test
