#pragma once
// Looking a program up in a colon-separated PATH list: the first regular file with
// execute permission, "" when there is none.
#include <functional>
#include <string>

namespace capsa {

enum class RelativeEntries {
  Search,  // as execvp does: an empty entry is the working directory, relative ones count
  Skip,    // only absolute directories (the host's tools found for a container: a
           // relative entry would depend on wherever capsa was started)
};

std::string find_executable(const std::string& name, const std::string& path_list, RelativeEntries relative);

// The same walk with the test of each candidate ("DIR/NAME") given: the first candidate
// `is_program` accepts, "" when none (e.g. inside an image's tree rather than the host's).
std::string first_on_path(const std::string& name, const std::string& path_list, RelativeEntries relative,
                          const std::function<bool(const std::string&)>& is_program);

// A system tool (e2fsck, mkfs.ext3, fuse2fs): PATH, then /usr/sbin, /sbin, /usr/bin and
// /bin, since e2fsprogs installs into sbin, out of most users' PATH; "" when nowhere.
std::string find_system_program(const std::string& name);

}  // namespace capsa
