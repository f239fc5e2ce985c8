#include "sif/writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "sif/image.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::sif {
namespace {

std::int64_t aligned(std::int64_t offset, std::int64_t alignment) {
  if (alignment <= 1 || offset % alignment == 0) return offset;
  return (offset / alignment + 1) * alignment;
}

// Copies the whole of in_fd to out_fd at `offset`; returns the byte count. copy_file_range
// lets the kernel move the bytes (or share extents), which matters for 20 GB partitions.
std::int64_t copy_file_at(int in_fd, int out_fd, std::int64_t offset) {
  std::int64_t total = 0;
  loff_t out_off = offset;
  for (;;) {
    ssize_t n = ::copy_file_range(in_fd, nullptr, out_fd, &out_off, 1 << 30, 0);
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("copying object data");
    }
    if (n == 0) return total;
    total += n;
  }
  // Fallback for file systems (or pipes) that refuse copy_file_range.
  std::vector<std::uint8_t> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(in_fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("reading object data");
    }
    if (n == 0) return total;
    write_all_at(out_fd, std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)),
                 static_cast<std::uint64_t>(out_off));
    out_off += n;
    total += n;
  }
}

bool is_primary_partition(const ObjectInput& input) {
  if (input.type != DataType::Partition) return false;
  Descriptor probe;
  probe.extra = input.extra;
  return probe.partition().part_type == PartType::PrimSys;
}

// Where the next object's data starts: the end of the data section, aligned.
std::int64_t next_offset(const Header& header, const ObjectInput& input) {
  std::int64_t alignment = input.alignment >= 0 ? input.alignment
                           : input.type == DataType::Partition ? kPartitionAlignment
                                                               : 1;
  return aligned(header.data_offset + header.data_size, alignment);
}

// Fills `slot` for data already written at `offset`; updates the in-memory header
// (free count, data size, arch). Nothing in the file refers to the new bytes until
// the caller writes the descriptor table and header.
void record_object(Header& header, std::vector<Descriptor>& slots, std::size_t slot_index, const ObjectInput& input,
                   std::int64_t now, std::int64_t offset, std::int64_t size) {
  if (is_primary_partition(input)) {
    for (const Descriptor& d : slots)
      if (d.used && d.data_type == DataType::Partition && d.partition().part_type == PartType::PrimSys)
        throw FormatError("image already contains a primary partition (object " + std::to_string(d.id) + ")");
    Descriptor probe;
    probe.extra = input.extra;
    std::string code = arch_code_from_name(probe.partition().arch);
    header.arch = {code[0], code[1], '\0'};
  }
  std::int64_t unaligned = header.data_offset + header.data_size;

  Descriptor& d = slots[slot_index];
  d = Descriptor{};
  d.data_type = input.type;
  d.used = true;
  d.id = static_cast<std::uint32_t>(slot_index + 1);
  d.raw_group_id = input.group_id | kGroupMask;
  d.raw_linked_id = input.link_is_group ? (input.linked_id | kGroupMask) : input.linked_id;
  d.offset = offset;
  d.size = size;
  d.size_with_padding = offset - unaligned + size;
  d.created_at = d.modified_at = input.time.value_or(now);
  d.set_name(input.name);
  d.extra = input.extra;

  header.descriptors_free -= 1;
  header.data_size += d.size_with_padding;
}

// Writes the object's data at the end of the data section and records it.
void append_object(int fd, Header& header, std::vector<Descriptor>& slots, std::size_t slot_index,
                   const ObjectInput& input, std::int64_t now) {
  std::int64_t offset = next_offset(header, input);
  std::int64_t size = 0;
  if (!input.data_path.empty()) {
    UniqueFd in = open_file(input.data_path, O_RDONLY);
    size = copy_file_at(in.get(), fd, offset);
  } else {
    write_all_at(fd, std::span(reinterpret_cast<const std::uint8_t*>(input.data.data()), input.data.size()),
                 static_cast<std::uint64_t>(offset));
    size = static_cast<std::int64_t>(input.data.size());
  }
  record_object(header, slots, slot_index, input, now, offset, size);
}

void write_table(int fd, const Header& header, const std::vector<Descriptor>& slots) {
  std::vector<std::uint8_t> table;
  table.reserve(slots.size() * kDescriptorSize);
  for (const Descriptor& d : slots) {
    auto record = encode_descriptor(d);
    table.insert(table.end(), record.begin(), record.end());
  }
  write_all_at(fd, table, static_cast<std::uint64_t>(header.descriptors_offset));
}

void write_header(int fd, const Header& header) { write_all_at(fd, encode_header(header), 0); }

void check_link(const ObjectInput& input) {
  if (input.link_is_group && input.linked_id == 0) throw FormatError("cannot link an object to group 0");
}

}  // namespace

ObjectInput partition_input(std::string data_path, FsType fs, PartType part, const std::string& arch) {
  ObjectInput input;
  input.type = DataType::Partition;
  input.data_path = std::move(data_path);
  Descriptor d;
  d.set_partition(fs, part, arch);
  input.extra = d.extra;
  return input;
}

namespace {

Header new_header(const CreateOptions& options, std::size_t object_count) {
  if (options.launch_script.size() >= kLaunchScriptSize)
    throw FormatError("launch script too long (" + std::to_string(options.launch_script.size()) +
                      " bytes; a SIF header holds at most 31)");
  if (options.descriptor_capacity < 1 || options.descriptor_capacity > 1 << 16)
    throw FormatError("descriptor capacity must be between 1 and 65536");
  if (static_cast<std::int64_t>(object_count) > options.descriptor_capacity)
    throw FormatError("more objects than descriptor slots");

  Header h;
  std::copy(options.launch_script.begin(), options.launch_script.end(), h.launch_script.begin());
  std::copy(kMagic.begin(), kMagic.end(), h.magic.begin());
  std::copy(kVersion.begin(), kVersion.end(), h.version.begin());
  h.arch = {'0', '0', '\0'};
  h.uuid = options.uuid.value_or(random_uuid());
  h.created_at = h.modified_at = options.time;
  h.descriptors_free = h.descriptors_total = options.descriptor_capacity;
  h.descriptors_offset = kDefaultDescriptorsOffset;
  h.descriptors_size = options.descriptor_capacity * static_cast<std::int64_t>(kDescriptorSize);
  h.data_offset = h.descriptors_offset + h.descriptors_size;
  h.data_size = 0;
  return h;
}

// Writes the descriptors and then the header, which is what makes the file a SIF, and
// renames it into place.
void seal(AtomicFile& out, const Header& h, const std::vector<Descriptor>& slots) {
  write_table(out.fd(), h, slots);
  write_header(out.fd(), h);
  // An empty image still spans its descriptor table.
  if (::ftruncate(out.fd(), h.data_offset + h.data_size) != 0) throw_errno("ftruncate");
  out.commit();
}

}  // namespace

void create(const std::string& path, const CreateOptions& options, const std::vector<ObjectInput>& objects) {
  with_context(path, [&] {
    Header h = new_header(options, objects.size());
    std::vector<Descriptor> slots(static_cast<std::size_t>(options.descriptor_capacity));
    AtomicFile out(path, 0755);  // a SIF is executable: its launch script runs it
    for (std::size_t i = 0; i < objects.size(); ++i) {
      check_link(objects[i]);
      append_object(out.fd(), h, slots, i, objects[i], options.time);
    }
    seal(out, h, slots);
  });
}

PartitionSlot::PartitionSlot(const std::string& path, const CreateOptions& options,
                             const std::vector<ObjectInput>& leading_objects, ObjectInput partition)
    : path_(path), time_(options.time), partition_(std::move(partition)) {
  with_context(path, [&] {
    if (partition_.type != DataType::Partition || !partition_.data_path.empty() || !partition_.data.empty())
      throw Error("a partition slot takes a partition ObjectInput without data");
    check_link(partition_);
    header_ = new_header(options, leading_objects.size() + 1);
    slots_.resize(static_cast<std::size_t>(options.descriptor_capacity));
    out_ = std::make_unique<AtomicFile>(path, 0755);
    for (std::size_t i = 0; i < leading_objects.size(); ++i) {
      check_link(leading_objects[i]);
      append_object(out_->fd(), header_, slots_, i, leading_objects[i], time_);
    }
    offset_ = next_offset(header_, partition_);
  });
}

PartitionSlot::~PartitionSlot() = default;

int PartitionSlot::fd() const { return out_->fd(); }
const std::string& PartitionSlot::temp_path() const { return out_->temp_path(); }

void PartitionSlot::finish(std::int64_t partition_size) {
  with_context(path_, [&] {
    if (!out_) throw Error("partition slot already finished");
    std::size_t index = 0;
    while (slots_[index].used) ++index;
    record_object(header_, slots_, index, partition_, time_, offset_, partition_size);
    seal(*out_, header_, slots_);
    out_.reset();
  });
}

std::uint32_t add_object(const std::string& path, const ObjectInput& input, std::int64_t now) {
  Image image = Image::open(path, true);
  return with_context(path, [&] {
    check_link(input);
    Header h = image.header();
    std::vector<Descriptor> slots = image.slots();
    std::size_t slot = 0;
    while (slot < slots.size() && slots[slot].used) ++slot;
    if (slot == slots.size())
      throw FormatError("all " + std::to_string(slots.size()) + " descriptor slots are in use; cannot add an object");
    // Order matters for a process killed mid-add: data first, then the descriptor, then
    // the header that makes the new object count. No fsync: like cp or mksquashfs, a
    // power loss is not guarded against, and syncing a 20 GB partition costs seconds.
    append_object(image.fd(), h, slots, slot, input, now);
    h.modified_at = now;
    write_table(image.fd(), h, slots);
    write_header(image.fd(), h);
    return slots[slot].id;
  });
}

void delete_object(const std::string& path, std::uint32_t id, const DeleteOptions& options, std::int64_t now) {
  Image image = Image::open(path, true);
  const Descriptor& d = image.object(id);
  with_context(path, [&] {
    Header h = image.header();
    bool is_last = true;
    for (const Descriptor& other : image.objects())
      if (other.offset + other.size > d.offset + d.size) is_last = false;
    if (options.compact && !is_last)
      throw FormatError("cannot compact: object " + std::to_string(id) + " is not the last object in the file");

    if (options.zero) {
      std::vector<std::uint8_t> zeros(1 << 20, 0);
      for (std::int64_t done = 0; done < d.size;) {
        std::int64_t chunk = std::min<std::int64_t>(d.size - done, static_cast<std::int64_t>(zeros.size()));
        write_all_at(image.fd(), std::span<const std::uint8_t>(zeros.data(), static_cast<std::size_t>(chunk)),
                     static_cast<std::uint64_t>(d.offset + done));
        done += chunk;
      }
    }
    if (d.data_type == DataType::Partition && d.partition().part_type == PartType::PrimSys)
      h.arch = {'0', '0', '\0'};
    if (options.compact) h.data_size -= d.size_with_padding;
    h.descriptors_free += 1;
    h.modified_at = now;

    std::int64_t truncate_at = d.offset + d.size - d.size_with_padding;
    std::vector<Descriptor> slots = image.slots();
    for (Descriptor& slot : slots)
      if (slot.used && slot.id == id) slot = Descriptor{};
    write_table(image.fd(), h, slots);
    write_header(image.fd(), h);
    if (options.compact && ::ftruncate(image.fd(), truncate_at) != 0) throw_errno("truncate");
  });
}

void set_primary_partition(const std::string& path, std::uint32_t id, std::int64_t now) {
  Image image = Image::open(path, true);
  const Descriptor& target = image.object(id);
  with_context(path, [&] {
    if (target.data_type != DataType::Partition)
      throw FormatError("object " + std::to_string(id) + " is " + std::string(name_of(target.data_type)) +
                        ", not a partition");
    PartitionInfo info = target.partition();
    if (info.part_type == PartType::PrimSys) return;
    if (info.part_type != PartType::System)
      throw FormatError("object " + std::to_string(id) + " is a " + std::string(name_of(info.part_type)) +
                        " partition; only a System partition can become primary");

    Header h = image.header();
    std::vector<Descriptor> slots = image.slots();
    for (Descriptor& d : slots) {
      if (!d.used || d.data_type != DataType::Partition) continue;
      PartitionInfo p = d.partition();
      if (d.id == id) {
        d.set_partition(p.fs_type, PartType::PrimSys, p.arch);
        std::string code = arch_code_from_name(p.arch);
        h.arch = {code[0], code[1], '\0'};
      } else if (p.part_type == PartType::PrimSys) {
        d.set_partition(p.fs_type, PartType::System, p.arch);
      }
    }
    h.modified_at = now;
    write_table(image.fd(), h, slots);
    write_header(image.fd(), h);
  });
}

}  // namespace capsa::sif
