#include "convert/merge_tree.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <limits>

#include "convert/entry_path.hpp"

namespace capsa::convert {
namespace {

constexpr int kMaxLinkChain = 40;

bool hides_children(const Node& dir, int layer) { return dir.whited_below > layer || dir.opaque_below > layer; }

void fill(Node& node, int layer, Kind kind, const Attributes& attrs) {
  node.kind = kind;
  node.layer = layer;
  node.attrs = attrs;
  node.explicit_attrs = true;
  node.target.clear();
  node.file_inode = nullptr;
  // A non-directory unlinks whatever lower layers had at this path, subtree included.
  if (kind != Kind::Directory) {
    node.children.clear();
    node.whited_below = std::max(node.whited_below, layer);
  }
}

void make_implicit_directory(Node& node, int layer) {
  node.kind = Kind::Directory;
  node.layer = layer;
  node.attrs = Attributes{};
  node.explicit_attrs = false;
  node.target.clear();
  node.file_inode = nullptr;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Directory: return "directory";
    case Kind::File: return "file";
    case Kind::Symlink: return "symlink";
    case Kind::Hardlink: return "hardlink";
    case Kind::Fifo: return "fifo";
    case Kind::Placeholder: break;
  }
  return "whiteout";
}

}  // namespace

std::uint32_t clamp_time(std::int64_t seconds) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(seconds, 0, std::numeric_limits<std::uint32_t>::max()));
}

Node* Children::find(const std::string& name) const {
  if (!map_) return nullptr;
  auto it = map_->find(name);
  return it == map_->end() ? nullptr : it->second.get();
}

Children::Map& Children::empty() {
  static Map none;  // never modified: begin() == end()
  return none;
}

MergeTree::MergeTree() {
  // The root exists before any layer, like the empty directory layers are applied to.
  make_implicit_directory(root_, INT_MAX);
}

// The directory that holds the last component of `path` for an entry of `layer`,
// creating the missing ones; nullptr when an upper layer hides the path.
// `materialize` false (whiteouts, opaque markers) leaves missing ancestors as
// placeholders: a marker alone must not make a directory appear in the image.
Node* MergeTree::parent_for(const std::vector<std::string>& path, int layer, bool materialize, Warnings& warnings,
                            const std::string& context) {
  Node* dir = &root_;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    if (hides_children(*dir, layer)) return nullptr;
    auto& slot = dir->children[path[i]];
    if (!slot) {
      slot = std::make_unique<Node>();
      slot->layer = layer;
    }
    Node& child = *slot;
    if (child.whited_below > layer) return nullptr;
    if (child.kind == Kind::Placeholder) {
      if (materialize) make_implicit_directory(child, layer);
    } else if (child.kind != Kind::Directory) {
      // Only an entry of this same layer can be here (anything upper set whited_below).
      // Never resolve through it: a symlink here must not redirect the entry, so the
      // later entry wins and the symlink or file becomes a directory.
      if (!materialize) return nullptr;
      std::vector<std::string> prefix(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      warnings.add("path", context + ": " + join_components(prefix) + " is a " + kind_name(child.kind) +
                               " earlier in the same layer; replaced by a directory");
      child.children.clear();
      make_implicit_directory(child, layer);
    }
    dir = &child;
  }
  if (hides_children(*dir, layer)) return nullptr;
  return dir;
}

Node* MergeTree::place(const std::vector<std::string>& path, int layer, Kind kind, const Attributes& attrs,
                       Warnings& warnings, const std::string& context) {
  if (path.empty()) {  // "./": attributes of the root; the root is always a directory
    if (kind != Kind::Directory) {
      warnings.add("path", context + ": a " + std::string(kind_name(kind)) + " cannot replace the image root; skipped");
      return nullptr;
    }
    if (!root_.explicit_attrs) {
      root_.attrs = attrs;
      root_.explicit_attrs = true;
    }
    return &root_;
  }
  Node* parent = parent_for(path, layer, /*materialize=*/true, warnings, context);
  if (!parent) return nullptr;
  auto& slot = parent->children[path.back()];
  if (!slot) slot = std::make_unique<Node>();
  Node& node = *slot;
  if (node.whited_below > layer) return nullptr;
  if (node.kind == Kind::Placeholder) {
    fill(node, layer, kind, attrs);
    return &node;
  }
  bool both_directories = node.kind == Kind::Directory && kind == Kind::Directory;
  if (node.layer == layer) {
    // A path twice in one layer: the spec forbids it, in practice the last entry wins.
    if (both_directories) {
      node.attrs = attrs;
      node.explicit_attrs = true;
    } else {
      fill(node, layer, kind, attrs);
    }
    return &node;
  }
  // The node comes from an upper layer.
  if (both_directories) {
    if (!node.explicit_attrs) {  // the upper layers only implied it: the highest real entry's attributes
      node.attrs = attrs;
      node.explicit_attrs = true;
    }
    return &node;
  }
  // Hidden; a non-directory here also unlinks what lower layers have under this path.
  if (kind != Kind::Directory) node.whited_below = std::max(node.whited_below, layer);
  return nullptr;
}

void MergeTree::add_whiteout(const std::vector<std::string>& path, int layer) {
  if (path.empty()) return;
  Warnings ignored;
  Node* parent = parent_for(path, layer, /*materialize=*/false, ignored, "");
  if (!parent) return;
  auto& slot = parent->children[path.back()];
  if (!slot) {
    slot = std::make_unique<Node>();
    slot->layer = layer;
  }
  slot->whited_below = std::max(slot->whited_below, layer);
}

void MergeTree::add_opaque(const std::vector<std::string>& dir, int layer) {
  if (dir.empty()) {
    root_.opaque_below = std::max(root_.opaque_below, layer);
    return;
  }
  Warnings ignored;
  Node* parent = parent_for(dir, layer, /*materialize=*/false, ignored, "");
  if (!parent) return;
  auto& slot = parent->children[dir.back()];
  if (!slot) {
    slot = std::make_unique<Node>();
    slot->layer = layer;
  }
  if (slot->whited_below > layer) return;
  slot->opaque_below = std::max(slot->opaque_below, layer);
}

Node& MergeTree::add_orphan_file(int layer, const Attributes& attrs) {
  auto& node = orphans_.emplace_back(std::make_unique<Node>());
  fill(*node, layer, Kind::File, attrs);
  node->orphan = true;
  return *node;
}

// Hardlink targets name a path in the archive, so symlinks on the way are not followed.
Node* MergeTree::find(const std::string& path) {
  SplitPath split = split_entry_path(path);
  if (!split.error.empty()) return nullptr;
  Node* node = &root_;
  for (const auto& name : split.components) {
    if (node->kind != Kind::Directory) return nullptr;
    node = node->children.find(name);
    if (!node) return nullptr;
  }
  return node;
}

void MergeTree::resolve_hardlinks(Warnings& warnings) {
  // Collected first: resolving may remove links, and a link may name another link.
  std::vector<std::pair<Node*, std::string>> links;  // node, its path
  std::function<void(Node&, const std::string&)> collect = [&](Node& dir, const std::string& prefix) {
    for (auto& [name, child] : dir.children) {
      std::string path = prefix + "/" + name;
      if (child->kind == Kind::Hardlink) links.emplace_back(child.get(), path);
      if (child->kind == Kind::Directory) collect(*child, path);
    }
  };
  collect(root_, "");

  std::vector<std::string> broken;
  for (auto& [link, path] : links) {
    Node* target = link;
    for (int hops = 0; target && target->kind == Kind::Hardlink; ++hops) {
      if (hops > kMaxLinkChain) {
        target = nullptr;
        break;
      }
      target = target->link_target ? target->link_target : find(target->target);
    }
    bool usable = target && target->kind != Kind::Hardlink && target->kind != Kind::Placeholder &&
                  target->kind != Kind::Directory;
    if (!usable) {
      warnings.add("hardlink", "hardlink " + path + " -> /" + link->target +
                                   ": target missing, deleted by a later layer, or a directory; skipped");
      broken.push_back(path);
      continue;
    }
    if (target->layer > link->layer)
      warnings.add("hardlink", "hardlink " + path + " -> /" + link->target +
                                   ": target was replaced by a later layer; the link now names the newer file");
    link->link_target = target;
  }
  for (const auto& path : broken) {
    auto cut = path.rfind('/');
    Node* parent = cut == 0 ? &root_ : find(path.substr(0, cut));
    if (parent) parent->children.erase(path.substr(cut + 1));
  }
}

}  // namespace capsa::convert
