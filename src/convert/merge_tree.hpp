#pragma once
// The image being built, as metadata only: one node per path, merged from the layers
// TOP-DOWN (last layer first). Because an upper layer is complete before any lower
// one is read, each lower entry can be decided at once: dropped when an upper layer
// defined, whited out, made opaque, or replaced an ancestor of its path, otherwise
// placed. A file's data is therefore read once, from the layer where it is visible,
// and hidden files are skipped without being stored anywhere.
//
// Equivalence with applying the layers bottom-up (image-spec layer.md) rests on two
// per-node marks, each holding the highest layer index that set it:
//   whited_below: this path and everything under it are hidden from lower layers
//                 (a whiteout `.wh.name`, or any non-directory entry at the path, which
//                 unlinks whatever the lower layers had there);
//   opaque_below: everything under this path is hidden from lower layers
//                 (`.wh..wh..opq`, applied to its whole layer whatever the tar order).
// An entry from layer k is hidden when any mark on its path (ancestors' either mark,
// its own whited_below) is > k; marks equal to k never hide: a whiteout does not
// hide files of its own layer.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/warnings.hpp"

struct sqfs_inode_generic_t;

namespace capsa::convert {

enum class Kind : std::uint8_t {
  Placeholder,  // only carries marks (a whiteout or opaque dir); not in the image
  Directory,
  File,
  Symlink,
  Hardlink,  // a name for another node's inode, resolved when the tree is complete
  Fifo,
};

struct Attributes {
  std::uint32_t mode = 0755;  // permission bits, setuid/setgid/sticky included
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t mtime = 0;    // squashfs keeps 32-bit unsigned times: see clamp_time()
};

// Times as squashfs can store them: before 1970 becomes 0, after 2106 the maximum.
std::uint32_t clamp_time(std::int64_t seconds);

struct Node;

// The entries of a directory. The map is allocated only for directories that have
// entries: most nodes are files, and memory per path is what bounds the converter.
class Children {
 public:
  // std::less<> on std::string orders bytes as unsigned char, the order squashfs
  // requires for directory entries.
  using Map = std::map<std::string, std::unique_ptr<Node>, std::less<>>;

  std::unique_ptr<Node>& operator[](const std::string& name) {
    if (!map_) map_ = std::make_unique<Map>();
    return (*map_)[name];
  }
  Node* find(const std::string& name) const;
  void erase(const std::string& name) {
    if (map_) map_->erase(name);
  }
  void clear() { map_.reset(); }
  Map::iterator begin() { return map_ ? map_->begin() : empty().begin(); }
  Map::iterator end() { return map_ ? map_->end() : empty().end(); }

 private:
  static Map& empty();
  std::unique_ptr<Map> map_;
};

struct Node {
  Kind kind = Kind::Placeholder;
  bool explicit_attrs = false;  // directories: attributes came from an entry, not implied by a child
  int layer = -1;               // layer that gave this node its content
  int whited_below = -1;
  int opaque_below = -1;
  Attributes attrs;
  std::string target;  // symlink target, or hardlink target path ("a/b")
  // Regular files: the slot where the block processor keeps this file's inode.
  sqfs_inode_generic_t** file_inode = nullptr;
  Children children;

  bool orphan = false;  // a file reached only through hardlinks (MergeTree::add_orphan_file)

  // Hardlink: the node whose inode this name shares; set early for links to orphans,
  // otherwise by MergeTree::resolve_hardlinks.
  Node* link_target = nullptr;
  // Filled while writing the image.
  std::uint32_t nlink = 0;
  std::uint32_t inode_number = 0;
  std::uint64_t inode_ref = 0;
};

class MergeTree {
 public:
  MergeTree();

  // The node an entry of `kind` from `layer` at `path` fills, or nullptr when upper
  // layers hide it. The node's kind, layer and attributes are set; for a directory
  // merged into an upper one only the attributes may change. `context` prefixes
  // warnings ("layer 2 (sha256:…): /a/b").
  Node* place(const std::vector<std::string>& path, int layer, Kind kind, const Attributes& attrs,
              Warnings& warnings, const std::string& context);

  // `.wh.<name>` at `path` (the whited-out path itself) in `layer`.
  void add_whiteout(const std::vector<std::string>& path, int layer);
  // `<dir>/.wh..wh..opq` in `layer`.
  void add_opaque(const std::vector<std::string>& dir, int layer);

  // A file with no name of its own in the image, kept because hardlinks of its layer
  // name it although an upper layer replaced or deleted its path: unpacking layer by
  // layer, such links keep the contents they had.
  Node& add_orphan_file(int layer, const Attributes& attrs);

  // Binds every Hardlink node not bound yet to the node it names in the finished tree.
  // Links whose target is missing, hidden or a directory are removed with a warning.
  void resolve_hardlinks(Warnings& warnings);

  // The node at `path` ("a/b"), literally: symlinks on the way are not followed.
  Node* find(const std::string& path);

  Node& root() { return root_; }

 private:
  Node* parent_for(const std::vector<std::string>& path, int layer, bool materialize, Warnings& warnings,
                   const std::string& context);

  Node root_;
  std::vector<std::unique_ptr<Node>> orphans_;
};

}  // namespace capsa::convert
