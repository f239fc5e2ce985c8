#pragma once
// An installed capsa of the test's own: PREFIX/bin/capsa and PREFIX/libexec/capsa/capsa-full
// copied from the build, and PREFIX/etc/capsa/capsa.conf written by the test, so that
// "the administrator's file" is one the test controls (the build tree's capsa reads the
// configured sysconfdir's). Made once per suite run: the binaries are large.
#include <string>
#include <vector>

#include "support/process.hpp"

namespace capsa::config::testing {

class SitePrefix {
 public:
  static const SitePrefix& get();
  const std::string& path() const { return path_; }
  std::string conf() const { return path_ + "/etc/capsa/capsa.conf"; }
  // Replaces the administrator's file (mode 0644).
  void write_conf(const std::string& text) const;
  // PREFIX/bin/capsa ARGS..., with `env` ("NAME=VALUE") added to the environment.
  test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) const;

 private:
  SitePrefix();
  std::string path_;
};

}  // namespace capsa::config::testing
