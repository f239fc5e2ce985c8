#pragma once
// A private SKS keyserver (Debian's `sks`) for one suite run: an empty key database built
// in a temporary folder with `sks build` (an empty dump), then `sks db` answering HKP on
// 127.0.0.1 at CAPSA_TEST_KEYSERVER_PORT (root) or the next port (anyone else), stopped
// and removed by the destructor.
#include <memory>
#include <string>

#include "support/background.hpp"
#include "support/temp_dir.hpp"

namespace capsa::test {

class SksServer {
 public:
  SksServer();
  ~SksServer();
  SksServer(const SksServer&) = delete;
  SksServer& operator=(const SksServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A port in the suite's range where nothing listens.
  int unused_port() const { return port_ + 5; }
  // The server's log, for failure messages.
  std::string log() const;

 private:
  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Background> db_;
};

}  // namespace capsa::test
