#pragma once
// Creating and modifying SIF files with the reference implementation's layout rules
// (docs/sif.md; apptainer/sif's pkg/sif create.go): objects are appended at the end of the
// data section, aligned (4096 for partitions by default), into the first free slot.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sif/layout.hpp"
#include "util/atomic_file.hpp"
#include "sif/uuid.hpp"

namespace capsa::sif {

struct CreateOptions {
  std::string launch_script = std::string(kDefaultLaunchScript);
  std::optional<Uuid> uuid;           // nullopt: random; all-zero for deterministic images
  std::int64_t time = kZeroTime;      // creation time, Unix seconds
  std::int64_t descriptor_capacity = kDefaultDescriptorCapacity;
};

struct ObjectInput {
  DataType type = DataType::Generic;
  std::string data_path;      // the object's bytes come from this file...
  std::string data;           // ...or from here when data_path is empty
  std::uint32_t group_id = kDefaultGroup;  // 0: no group
  std::uint32_t linked_id = 0;             // 0: no link
  bool link_is_group = false;
  std::int64_t alignment = -1;             // -1: 4096 for partitions, none otherwise
  std::string name;
  std::array<std::uint8_t, kExtraSize> extra{};  // filled with Descriptor::set_* helpers
  std::optional<std::int64_t> time;        // descriptor time; defaults to the operation's
};

// Builds an ObjectInput whose extra holds partition metadata.
ObjectInput partition_input(std::string data_path, FsType fs, PartType part, const std::string& arch);

// Writes a new SIF at `path` (via a temporary file and rename) holding `objects`.
void create(const std::string& path, const CreateOptions& options, const std::vector<ObjectInput>& objects);

// A new SIF whose last object, the partition, is written in place by someone else (a
// squashfs converter), so that its bytes are never copied. The leading objects are
// written at construction; the partition's bytes go to fd() from offset() on; finish()
// then writes its descriptor and, last, the header, and renames the file into place.
// Until then the file has a temporary name and an all-zero header (not a SIF), and a
// slot destroyed unfinished removes it.
class PartitionSlot {
 public:
  // `partition` is partition_input("", ...): its data is what the caller writes.
  PartitionSlot(const std::string& path, const CreateOptions& options, const std::vector<ObjectInput>& leading_objects,
                ObjectInput partition);
  PartitionSlot(const PartitionSlot&) = delete;
  PartitionSlot& operator=(const PartitionSlot&) = delete;
  ~PartitionSlot();

  int fd() const;
  std::int64_t offset() const { return offset_; }  // aligned like any partition (4096)
  const std::string& temp_path() const;

  // `partition_size` bytes from offset() on are the partition; anything past them is cut.
  void finish(std::int64_t partition_size);

 private:
  std::string path_;
  std::int64_t time_;
  ObjectInput partition_;
  Header header_;
  std::vector<Descriptor> slots_;
  std::unique_ptr<AtomicFile> out_;
  std::int64_t offset_ = 0;
};

// Appends an object in place; returns its ID. The data and descriptor are written
// before the header, so an interrupted add leaves the previous image readable.
std::uint32_t add_object(const std::string& path, const ObjectInput& input, std::int64_t now);

struct DeleteOptions {
  bool zero = false;     // overwrite the object's bytes with zeros
  bool compact = false;  // truncate the file; only for the last object
};
void delete_object(const std::string& path, std::uint32_t id, const DeleteOptions& options, std::int64_t now);

// Makes a System partition the primary one; the old primary becomes System.
void set_primary_partition(const std::string& path, std::uint32_t id, std::int64_t now);

}  // namespace capsa::sif
