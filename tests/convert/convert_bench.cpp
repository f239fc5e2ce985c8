// A command-line front end to layers_to_squashfs for bench/convert.sh (not a test):
//   convert_bench OUTPUT zstd|gzip|xz[:LEVEL] WORKERS LAYER...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "convert/convert.hpp"
#include "util/error.hpp"

int main(int argc, char** argv) {
  using namespace capsa::convert;
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s OUTPUT zstd|gzip|xz WORKERS LAYER...\n", argv[0]);
    return 2;
  }
  ConvertOptions options;
  std::string compressor = argv[2];  // name[:level]
  if (auto colon = compressor.find(':'); colon != std::string::npos) {
    options.level = std::atoi(compressor.c_str() + colon + 1);
    compressor.resize(colon);
  }
  options.compressor = compressor == "gzip" ? Compressor::Gzip : compressor == "xz" ? Compressor::Xz : Compressor::Zstd;
  options.workers = static_cast<unsigned>(std::atoi(argv[3]));
  std::vector<LayerInput> layers;
  for (int i = 4; i < argc; ++i) layers.push_back({argv[i], std::nullopt, argv[i]});
  auto start = std::chrono::steady_clock::now();
  try {
    ConversionResult result = layers_to_squashfs(layers, {}, argv[1], options);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%llu inodes, %llu files, %llu bytes out, %.2f s\n", static_cast<unsigned long long>(result.inode_count),
                static_cast<unsigned long long>(result.file_count),
                static_cast<unsigned long long>(result.output_bytes), seconds);
    for (const auto& w : result.warnings) std::printf("warning: %s\n", w.c_str());
  } catch (const capsa::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
