#pragma once
// An execution control list as Apptainer's ecl.toml writes it:
//   activated = true|false        (false, or absent: every image may run)
//   legacyinsecure = true|false   (check the legacy signatures of Singularity < 3.6)
//   [[execgroup]]
//   tagname = "site"              (named in every refusal)
//   mode = "whitelist"            (signed by at least one keyfp) | "whitestrict" (by
//                                  every keyfp) | "blacklist" (by none)
//   dirpath = "/shared/images"    (the group of images directly in that directory;
//                                  absent or "": of images in no other group's dirpath)
//   keyfp = ["40 hex digits", ...]
// capsa checks it as Apptainer's ValidateConfig does (one group per dirpath, dirpaths
// absolute with symbolic links resolved, 40-digit fingerprints) and is stricter where a
// mistake would silently let images run: an unknown key, a group without tagname, mode
// or keyfp, or a value of the wrong type is an error naming FILE:LINE.
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace capsa::ecl {

enum class Mode { whitelist, whitestrict, blacklist };
std::string_view name_of(Mode mode);

struct ExecGroup {
  std::string tagname;
  Mode mode = Mode::whitelist;
  std::string dirpath;              // "": the group of images no other dirpath takes
  std::vector<std::string> keyfps;  // upper-case hex
  int line = 0;                     // of its [[execgroup]] header
};

struct ExecutionControlList {
  std::string path;  // the file, for messages
  bool activated = false;
  bool legacy = false;
  std::vector<ExecGroup> groups;

  // The group of an image directly in `directory` (resolved, absolute): the one with that
  // dirpath, else the one without a dirpath, else nullptr (the image may not run).
  const ExecGroup* group_for(const std::string& directory) const;
};

// Parses `text` read from `path`. Throws FormatError "PATH:LINE: ...".
ExecutionControlList parse_ecl(std::string_view text, const std::string& path);

// The rule on who may write the list, as Apptainer's for its administrator's files: owned
// by root (or by `installer`, the owner of the running capsa, whose own installation it
// is: a user's capsa in ~/.local trusts that user's list, and binds no one else), and not
// writable by group or others. Throws Error naming the file and the fix.
void check_ecl_owner(const std::string& path, uid_t owner, mode_t mode, uid_t installer);

// Reads the list at `path` after checking its owner and mode. Throws Error.
ExecutionControlList read_ecl(const std::string& path);

}  // namespace capsa::ecl
