// Fuzzes the definition-file parser: any text must either be refused with
// capsa::FormatError (whose message starts with "FILE:LINE:") or parse into at least one
// stage whose header starts with Bootstrap; parsing a stage's own text again must give
// the same header and sections.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "build/definition.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  capsa::build::ParseOptions options;
  options.file_name = "fuzz.def";
  options.build_args = {{"ARG", "value"}};
  options.warn_unused_build_args = true;
  try {
    auto result = capsa::build::parse_definition(text, options);
    const auto& stages = result.definition.stages;
    if (stages.empty() || stages.front().header.empty() || stages.front().header.front().first != "bootstrap")
      std::abort();
    for (const auto& stage : stages) {
      if (stage.header.empty() || stage.header.front().first != "bootstrap") std::abort();
      capsa::build::ParseOptions again;
      again.file_name = "again.def";
      // %files from names an earlier stage, which a single stage does not have.
      bool has_from = false;
      for (const auto& block : stage.files) has_from |= !block.from_stage.empty();
      if (has_from || stage.text.find("{{") != std::string::npos) continue;
      auto reparsed = capsa::build::parse_definition(stage.text, again).definition;
      if (reparsed.stages.size() != 1) std::abort();
      const auto& s = reparsed.stages.front();
      if (s.header != stage.header || s.post.body != stage.post.body || s.labels != stage.labels) std::abort();
    }
  } catch (const capsa::FormatError& e) {
    if (std::string(e.what()).rfind("fuzz.def:", 0) != 0 && std::string(e.what()).find("build argument") == std::string::npos)
      std::abort();
  }
  return 0;
}
