#include "runtime/host_source.hpp"

#include <fcntl.h>

#include <cerrno>

namespace capsa::runtime {

HostSource HostSource::examine(const std::string& path) {
  HostSource source;
  // Two opens tell a directory from anything else without an fstat: most sources (/proc,
  // /dev, home, /tmp, the working directory) are directories, found by the first.
  source.fd_.reset(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (source.fd_) {
    source.exists_ = source.directory_ = true;
  } else if (errno == ENOTDIR) {
    source.fd_.reset(::open(path.c_str(), O_PATH | O_CLOEXEC));
    source.exists_ = static_cast<bool>(source.fd_);
  }
  return source;
}

HostSource HostSource::examined_elsewhere(bool directory) {
  HostSource source;
  source.exists_ = true;
  source.directory_ = directory;
  return source;
}

std::string HostSource::mount_source(const std::string& path) const {
  return fd_ ? "/proc/self/fd/" + std::to_string(fd_.get()) : path;
}

std::vector<HostSource> examine_sources(const std::vector<MountStep>& steps) {
  std::vector<HostSource> sources;
  sources.reserve(steps.size());
  for (const MountStep& step : steps) {
    const bool bind = step.kind == MountStep::Kind::Bind || step.kind == MountStep::Kind::RecursiveBind;
    sources.push_back(bind ? HostSource::examine(step.source) : HostSource());
  }
  return sources;
}

}  // namespace capsa::runtime
