#include "convert/convert.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "convert/entry_path.hpp"
#include "convert/layer_reader.hpp"
#include "convert/merge_tree.hpp"
#include "convert/squashfs_writer.hpp"
#include "convert/warnings.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/human_size.hpp"

namespace capsa::convert {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
// A sparse file whose holes add up to more than this is stored empty: filling the
// holes through the block processor costs time proportional to the logical size, and
// such files are in practice /var/log/lastlog after `useradd` with a large uid
// (hundreds of GB of holes).
constexpr std::uint64_t kMaxSparseBytes = 1ull << 30;
constexpr std::uint64_t kProgressStep = 1 << 20;

// Names from a layer go into one-line warnings: control bytes become '?'.
std::string printable(std::string_view text) {
  std::string out(text.substr(0, 512));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > 512) out += "...";
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::uint64_t blob_size(const LayerInput& layer, const std::string& label) {
  if (layer.range) return layer.range->length;
  struct stat st {};
  if (::stat(layer.path.c_str(), &st) != 0) throw SystemError(label + ": " + layer.path, errno);
  return static_cast<std::uint64_t>(st.st_size);
}

// What one layer's hardlinks may need from that same layer (see relink_hidden_targets).
struct LayerLinks {
  std::unordered_set<std::string> hidden_files;                // regular files hidden by upper layers
  std::vector<std::pair<std::string, std::string>> links;      // visible hardlink path, target path
};

// "a/b" for the components {"a", "b"}: how hardlink targets are keyed.
std::string key_of(const std::vector<std::string>& path) { return join_components(path).substr(1); }

// Applies layers top-down into one MergeTree and one SquashfsWriter.
class Converter {
 public:
  Converter(SquashfsWriter& writer, const ConvertOptions& options, std::uint64_t total_input)
      : writer_(writer), options_(options), total_input_(total_input) {}

  void add_extras(const std::vector<ExtraEntry>& extras, int layer);
  std::string apply_layer(const LayerInput& input, int layer, const std::string& label);
  MergeTree& tree() { return tree_; }
  std::vector<std::string> finish_warnings() {
    if (xattr_entries_ > 0)
      warnings_.add("xattr", std::to_string(xattr_entries_) +
                                 " entries carried extended attributes (e.g. security.capability); not stored: "
                                 "containers run unprivileged on a nosuid mount, where file capabilities do not "
                                 "apply, and labels such as security.selinux belong to the build host");
    return warnings_.finish();
  }
  Warnings& warnings() { return warnings_; }

 private:
  void apply_entry(LayerReader& reader, archive_entry* entry, int layer);
  void stream_file(LayerReader& reader, archive_entry* entry, Node& node, const std::string& context);
  void relink_hidden_targets(const LayerInput& input, int layer, const std::string& label);
  void report_progress(std::uint64_t done);
  void count_declared_size(archive_entry* entry, const std::string& context);
  void charge_unpacked(std::uint64_t bytes, const std::string& context);

  SquashfsWriter& writer_;
  const ConvertOptions& options_;
  MergeTree tree_;
  Warnings warnings_;
  std::uint64_t xattr_entries_ = 0;
  LayerLinks links_;  // of the layer being applied
  std::uint64_t declared_bytes_ = 0;  // file sizes declared so far, for max_unpacked_bytes
  std::uint64_t total_input_;
  std::uint64_t input_done_ = 0;  // blobs finished so far
  std::uint64_t last_reported_ = 0;
};

void Converter::report_progress(std::uint64_t done) {
  if (!options_.progress || (done < last_reported_ + kProgressStep && done != total_input_)) return;
  last_reported_ = done;
  options_.progress(Progress{done, total_input_});
}

void Converter::count_declared_size(archive_entry* entry, const std::string& context) {
  // Sparse files are charged by the data they store, as stream_file reads it.
  if (archive_entry_sparse_count(entry) > 0 || !archive_entry_size_is_set(entry)) return;
  charge_unpacked(static_cast<std::uint64_t>(std::max<la_int64_t>(archive_entry_size(entry), 0)), context);
}

void Converter::charge_unpacked(std::uint64_t bytes, const std::string& context) {
  if (!options_.max_unpacked_bytes) return;
  const std::uint64_t limit = *options_.max_unpacked_bytes;
  if (bytes > limit || declared_bytes_ > limit - bytes)
    throw FormatError(context + ": the image's files add up to more than " + human_size(static_cast<std::int64_t>(limit)) +
                      ", the limit for an unpacked image (a decompression bomb?); set CAPSA_MAX_UNPACKED_SIZE "
                      "to allow more");
  declared_bytes_ += bytes;
}

void Converter::add_extras(const std::vector<ExtraEntry>& extras, int layer) {
  std::int64_t now = options_.source_date_epoch.value_or(static_cast<std::int64_t>(std::time(nullptr)));
  for (const auto& extra : extras) {
    SplitPath split = split_entry_path(extra.path);
    if (!split.error.empty()) throw Error("extra entry " + printable(extra.path) + ": " + split.error);
    Attributes attrs{static_cast<std::uint32_t>(extra.mode & 07777), extra.uid, extra.gid, clamp_time(now)};
    std::string context = "extra entry " + join_components(split.components);
    switch (extra.type) {
      case ExtraEntry::Type::Directory:
        tree_.place(split.components, layer, Kind::Directory, attrs, warnings_, context);
        break;
      case ExtraEntry::Type::Symlink:
        if (Node* node = tree_.place(split.components, layer, Kind::Symlink, attrs, warnings_, context))
          node->target = extra.content_or_target;
        break;
      case ExtraEntry::Type::File:
        if (Node* node = tree_.place(split.components, layer, Kind::File, attrs, warnings_, context)) {
          node->file_inode = writer_.begin_file();
          writer_.append(extra.content_or_target.data(), extra.content_or_target.size());
          writer_.end_file();
        }
        break;
    }
  }
}

std::string Converter::apply_layer(const LayerInput& input, int layer, const std::string& label) {
  links_ = LayerLinks{};
  LayerReader reader(input, label);
  while (archive_entry* entry = reader.next()) {
    apply_entry(reader, entry, layer);
    report_progress(input_done_ + reader.blob_bytes_read());
  }
  std::string diff_id = reader.diff_id();
  if (input.blob_digest) {
    const std::string stored = reader.stored_digest();
    if (stored != *input.blob_digest)
      throw FormatError(label + ": its content is " + stored + " but the manifest says " + *input.blob_digest +
                        " (corrupt or substituted layer)");
  }
  relink_hidden_targets(input, layer, label);
  input_done_ += blob_size(input, label);
  report_progress(input_done_);
  return diff_id;
}

// A hardlink names the file at its target path *as of its own layer*. When an upper
// layer replaced or deleted that path, the file was skipped in the first pass; the
// layer is then read a second time (rare: only then) to store those files without a
// name, so the links keep the contents that unpacking layer by layer gives them.
void Converter::relink_hidden_targets(const LayerInput& input, int layer, const std::string& label) {
  std::unordered_map<std::string, std::vector<std::string>> wanted;  // target -> link paths
  for (const auto& [link, target] : links_.links)
    if (links_.hidden_files.count(target) != 0) wanted[target].push_back(link);
  links_ = LayerLinks{};
  if (wanted.empty()) return;
  LayerReader again(input, label);
  while (archive_entry* entry = again.next()) {
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry)) continue;
    const char* raw_path = archive_entry_pathname(entry);
    SplitPath split = split_entry_path(raw_path ? raw_path : "");
    auto it = split.error.empty() ? wanted.find(key_of(split.components)) : wanted.end();
    if (it == wanted.end()) continue;
    Attributes attrs{static_cast<std::uint32_t>(archive_entry_perm(entry) & 07777),
                     static_cast<std::uint32_t>(archive_entry_uid(entry)),
                     static_cast<std::uint32_t>(archive_entry_gid(entry)), clamp_time(archive_entry_mtime(entry))};
    Node& file = tree_.add_orphan_file(layer, attrs);
    stream_file(again, entry, file, label + ": " + printable(raw_path));
    for (const auto& link_path : it->second) {
      Node* link = tree_.find(link_path);
      if (link && link->kind == Kind::Hardlink && link->target == it->first) link->link_target = &file;
    }
    wanted.erase(it);
    if (wanted.empty()) return;
  }
}

void Converter::apply_entry(LayerReader& reader, archive_entry* entry, int layer) {
  const char* raw_path = archive_entry_pathname(entry);
  if (!raw_path) raw_path = archive_entry_pathname_utf8(entry);
  if (!raw_path) {
    warnings_.add("path", reader.label() + ": an entry without a readable name; skipped");
    return;
  }
  std::string context = reader.label() + ": " + printable(raw_path);
  SplitPath split = split_entry_path(raw_path);
  if (!split.error.empty()) {
    warnings_.add("path", context + ": " + split.error + "; skipped");
    return;
  }
  std::vector<std::string>& path = split.components;
  for (std::size_t i = 0; i + 1 < path.size(); ++i)
    if (starts_with(path[i], kWhiteoutPrefix)) {
      warnings_.add("path", context + ": inside a whiteout name; skipped");
      return;
    }
  // Whiteout names first, whatever the entry's type: some images store them as
  // hardlinks (B7, cmssw/el9).
  if (!path.empty() && starts_with(path.back(), kWhiteoutPrefix)) {
    const std::string name = path.back();
    path.pop_back();
    if (name == kOpaqueMarker) {
      tree_.add_opaque(path, layer);
    } else if (name == kWhiteoutPrefix) {
      warnings_.add("path", context + ": a whiteout without a name; skipped");
    } else if (!starts_with(name, ".wh..wh.")) {  // ".wh..wh.plnk" etc.: AUFS metadata, dropped
      path.push_back(name.substr(kWhiteoutPrefix.size()));
      tree_.add_whiteout(path, layer);
    }
    return;
  }
  if (archive_entry_xattr_count(entry) > 0) ++xattr_entries_;
  if (archive_entry_filetype(entry) == AE_IFREG && !archive_entry_hardlink(entry) && !archive_entry_hardlink_utf8(entry))
    count_declared_size(entry, context);

  Attributes attrs{static_cast<std::uint32_t>(archive_entry_perm(entry) & 07777),
                   static_cast<std::uint32_t>(archive_entry_uid(entry)),
                   static_cast<std::uint32_t>(archive_entry_gid(entry)), clamp_time(archive_entry_mtime(entry))};
  const char* link = archive_entry_hardlink(entry);
  if (!link) link = archive_entry_hardlink_utf8(entry);
  if (link) {
    SplitPath target = split_entry_path(link);
    if (!target.error.empty() || target.components.empty()) {
      warnings_.add("path", context + ": hardlink target " + printable(link) + ": " +
                                (target.error.empty() ? "the image root" : target.error) + "; skipped");
      return;
    }
    if (Node* node = tree_.place(path, layer, Kind::Hardlink, attrs, warnings_, context)) {
      node->target = key_of(target.components);
      links_.links.emplace_back(key_of(path), node->target);
    }
    return;
  }
  switch (archive_entry_filetype(entry)) {
    case AE_IFDIR:
      tree_.place(path, layer, Kind::Directory, attrs, warnings_, context);
      return;
    case AE_IFREG:
      if (Node* node = tree_.place(path, layer, Kind::File, attrs, warnings_, context))
        stream_file(reader, entry, *node, context);
      else
        links_.hidden_files.insert(key_of(path));
      return;
    case AE_IFLNK: {
      const char* target = archive_entry_symlink(entry);
      if (!target) target = archive_entry_symlink_utf8(entry);
      std::string_view t = target ? target : "";
      if (t.empty() || t.size() > kMaxPathBytes) {
        warnings_.add("path", context + ": symlink with an empty or over-long target; skipped");
        return;
      }
      // Stored verbatim, never resolved: the image is never materialised on the host.
      if (Node* node = tree_.place(path, layer, Kind::Symlink, attrs, warnings_, context)) node->target = t;
      return;
    }
    case AE_IFIFO:
      tree_.place(path, layer, Kind::Fifo, attrs, warnings_, context);
      return;
    case AE_IFCHR:
    case AE_IFBLK:
      warnings_.add("device", context + ": device node skipped (the runtime provides /dev)");
      return;
    case AE_IFSOCK:
      warnings_.add("special", context + ": socket skipped (sockets cannot be stored meaningfully)");
      return;
    default:
      warnings_.add("special", context + ": entry of unknown type skipped");
      return;
  }
}

void Converter::stream_file(LayerReader& reader, archive_entry* entry, Node& node, const std::string& context) {
  std::uint64_t size = archive_entry_size_is_set(entry) ? static_cast<std::uint64_t>(archive_entry_size(entry)) : 0;
  bool sparse = archive_entry_sparse_count(entry) > 0;
  node.file_inode = writer_.begin_file();
  if (sparse && size > kMaxSparseBytes) {
    warnings_.add("sparse", context + ": sparse file of " + std::to_string(size) + " bytes stored empty");
    writer_.end_file();
    return;
  }
  std::uint64_t written = 0;
  reader.read_data([&](const char* data, std::size_t n, std::uint64_t offset) {
    if (offset < written || offset - written > kMaxSparseBytes)
      throw FormatError(context + ": corrupt sparse file map");
    if (offset > written) writer_.append_zeros(offset - written);
    if (sparse) charge_unpacked(n, context);
    writer_.append(data, n);
    written = offset + n;
  });
  if (sparse && size > written) writer_.append_zeros(size - written);  // a hole at the end
  writer_.end_file();
}

std::string layer_label(const LayerInput& input, std::size_t index, std::size_t count) {
  std::string label = "layer " + std::to_string(index + 1) + "/" + std::to_string(count);
  return label + " (" + (input.display_name.empty() ? input.path : input.display_name) + ")";
}

}  // namespace

namespace {

std::uint64_t total_input_size(const std::vector<LayerInput>& layers) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) total += blob_size(layers[i], layer_label(layers[i], i, layers.size()));
  return total;
}

// Applies every layer and the extras through `writer`; `output_label` names the output in errors.
ConversionResult convert_into(SquashfsWriter& writer, const std::vector<LayerInput>& layers,
                              const std::vector<ExtraEntry>& extras, std::uint64_t total_input,
                              const std::string& output_label, const ConvertOptions& options) {
  Converter converter(writer, options, total_input);
  ConversionResult result;
  result.diff_ids.resize(layers.size());

  // Top-down: the extras, then the last layer first (see merge_tree.hpp), then the
  // extras wanted only where no layer put anything, as if they were a layer below all.
  std::vector<ExtraEntry> above, below;
  for (const ExtraEntry& extra : extras) (extra.only_if_missing ? below : above).push_back(extra);
  converter.add_extras(above, static_cast<int>(layers.size()));
  for (std::size_t i = layers.size(); i-- > 0;) {
    std::string label = layer_label(layers[i], i, layers.size());
    std::string diff_id = converter.apply_layer(layers[i], static_cast<int>(i), label);
    if (layers[i].diff_id && *layers[i].diff_id != diff_id)
      throw FormatError(label + ": uncompressed content is " + diff_id + " but the image config says " +
                        *layers[i].diff_id + " (corrupt or substituted layer)");
    result.diff_ids[i] = std::move(diff_id);
  }
  converter.add_extras(below, -1);
  converter.tree().resolve_hardlinks(converter.warnings());
  ImageCounts counts = with_context(output_label, [&] { return writer.finish(converter.tree().root(), options.source_date_epoch); });
  result.inode_count = counts.inodes;
  result.file_count = counts.files;
  result.output_bytes = counts.bytes;
  result.warnings = converter.finish_warnings();
  return result;
}

}  // namespace

ConversionResult layers_to_squashfs(const std::vector<LayerInput>& layers, const std::vector<ExtraEntry>& extras,
                                    const std::string& output_path, const ConvertOptions& options) {
  std::uint64_t total_input = total_input_size(layers);
  AtomicFile output(output_path, 0644);
  SquashfsWriter writer(output.temp_path(), options);
  ConversionResult result = convert_into(writer, layers, extras, total_input, output_path, options);
  output.commit();
  result.output_path = output_path;
  return result;
}

ConversionResult layers_to_squashfs(const std::vector<LayerInput>& layers, const std::vector<ExtraEntry>& extras,
                                    int fd, std::uint64_t offset, const std::string& label,
                                    const ConvertOptions& options) {
  std::uint64_t total_input = total_input_size(layers);
  SquashfsWriter writer(fd, offset, label, options);
  return convert_into(writer, layers, extras, total_input, label, options);
}

}  // namespace capsa::convert
