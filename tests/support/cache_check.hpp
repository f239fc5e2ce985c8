#pragma once
// What "the cache is consistent" means after a fault, checked from the outside:
//  * every file under an entry's name is a whole, correct entry: a blob's bytes hash to
//    the digest in its name, a SIF opens and has a squashfs primary partition;
//  * nothing else sits under blobs/ or sif/ but `.partial` files (kept on purpose, to be
//    resumed or truncated by the next producer) and `.lock` files;
//  * no lock is held (call it when no capsa runs): each `.lock` can be taken exclusively;
//  * `tmp/` holds nothing that a dead process left and that the next pull would not sweep
//    (reported separately: a SIGKILL leaves its scratch until then).
#include <string>
#include <vector>

namespace capsa::test {

struct CacheCheck {
  std::vector<std::string> problems;           // each one a broken promise
  std::vector<std::string> partials;           // resumable leftovers (relative paths)
  std::vector<std::string> stale_temporaries;  // tmp/ items whose creator is gone
  int blobs = 0;                               // verified entries
  int sifs = 0;
};

CacheCheck check_cache(const std::string& root);

}  // namespace capsa::test
