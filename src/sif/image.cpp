#include "sif/image.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "util/error.hpp"

namespace capsa::sif {
namespace {

// Bounds every descriptor table to something a real image could have; a corrupt count
// must not make us allocate gigabytes.
constexpr std::int64_t kMaxDescriptors = 1 << 16;

std::string object_label(const Descriptor& d) {
  return "object " + std::to_string(d.id) + " (" + std::string(name_of(d.data_type)) + ")";
}

// a + b <= limit without overflow, for non-negative a and b.
bool fits(std::int64_t a, std::int64_t b, std::uint64_t limit) {
  if (a < 0 || b < 0) return false;
  auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  return ua <= limit && ub <= limit - ua;
}

}  // namespace

Image Image::open(const std::string& path, bool writable) {
  Image image;
  image.path_ = path;
  image.fd_ = open_file(path, writable ? O_RDWR : O_RDONLY);
  image.file_size_ = capsa::file_size(image.fd_.get());
  with_context(path, [&] {
    if (image.file_size_ == 0) throw FormatError("file is empty, not a SIF image");
    if (image.file_size_ < kHeaderSize)
      throw FormatError("not a SIF image: only " + std::to_string(image.file_size_) +
                        " bytes, shorter than the 128-byte SIF header");
    std::array<std::uint8_t, kHeaderSize> raw{};
    read_exact_at(image.fd_.get(), raw, 0, "SIF header");
    image.header_ = decode_header(raw);
    const Header& h = image.header_;
    if (std::string_view(h.magic.data(), h.magic.size()) != kMagic)
      throw FormatError("not a SIF image (no SIF_MAGIC at byte 32)");
    if (std::string_view(h.version.data(), h.version.size()) != kVersion)
      throw FormatError("unsupported SIF version \"" + h.version_text() + "\" (capsa reads version 01)");
    if (h.descriptors_total < 0 || h.descriptors_total > kMaxDescriptors)
      throw FormatError("corrupt header: descriptor count " + std::to_string(h.descriptors_total) +
                        " is out of range");
    std::int64_t table_bytes = h.descriptors_total * static_cast<std::int64_t>(kDescriptorSize);
    if (h.descriptors_size < table_bytes)
      throw FormatError("corrupt header: descriptor area of " + std::to_string(h.descriptors_size) +
                        " bytes cannot hold " + std::to_string(h.descriptors_total) + " descriptors");
    if (h.descriptors_offset < static_cast<std::int64_t>(kHeaderSize))
      throw FormatError("corrupt header: descriptor table at offset " + std::to_string(h.descriptors_offset) +
                        " overlaps the 128-byte header");
    if (!fits(h.descriptors_offset, table_bytes, image.file_size_))
      throw FormatError("corrupt header: descriptor table at offset " + std::to_string(h.descriptors_offset) +
                        " lies outside the file (" + std::to_string(image.file_size_) + " bytes); the file may be truncated");
    std::vector<std::uint8_t> table(static_cast<std::size_t>(table_bytes));
    read_exact_at(image.fd_.get(), table, static_cast<std::uint64_t>(h.descriptors_offset), "descriptor table");
    image.slots_.reserve(static_cast<std::size_t>(h.descriptors_total));
    for (std::size_t i = 0; i < static_cast<std::size_t>(h.descriptors_total); ++i) {
      auto record = std::span<const std::uint8_t, kDescriptorSize>(table.data() + i * kDescriptorSize, kDescriptorSize);
      image.slots_.push_back(decode_descriptor(record));
    }
    image.validate();
  });
  return image;
}

void Image::validate() const {
  const Header& h = header_;
  if (h.data_offset < 0 || h.data_size < 0 || !fits(h.data_offset, h.data_size, file_size_))
    throw FormatError("corrupt header: data section (offset " + std::to_string(h.data_offset) + ", size " +
                      std::to_string(h.data_size) + ") extends past the end of the file (" +
                      std::to_string(file_size_) + " bytes); the file may be truncated");

  std::uint64_t table_end = static_cast<std::uint64_t>(h.descriptors_offset) +
                            static_cast<std::uint64_t>(h.descriptors_total) * kDescriptorSize;
  std::vector<const Descriptor*> used;
  for (const Descriptor& d : slots_) {
    if (!d.used) continue;
    if (d.id == 0) throw FormatError("corrupt descriptor: a used descriptor has ID 0");
    if (!fits(d.offset, d.size, file_size_))
      throw FormatError(object_label(d) + " at offset " + std::to_string(d.offset) + " with size " +
                        std::to_string(d.size) + " extends past the end of the file (" +
                        std::to_string(file_size_) + " bytes); the file may be truncated");
    if (d.size > 0 && static_cast<std::uint64_t>(d.offset) < table_end)
      throw FormatError(object_label(d) + " at offset " + std::to_string(d.offset) +
                        " overlaps the SIF header or descriptor table");
    for (const Descriptor* other : used)
      if (other->id == d.id) throw FormatError("corrupt descriptors: two objects share ID " + std::to_string(d.id));
    used.push_back(&d);
  }
  std::sort(used.begin(), used.end(), [](const Descriptor* a, const Descriptor* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < used.size(); ++i) {
    const Descriptor& prev = *used[i - 1];
    const Descriptor& next = *used[i];
    if (prev.size > 0 && next.size > 0 && prev.offset + prev.size > next.offset)
      throw FormatError(object_label(prev) + " and " + object_label(next) + " overlap");
  }
}

std::vector<Descriptor> Image::objects() const {
  std::vector<Descriptor> out;
  for (const Descriptor& d : slots_)
    if (d.used) out.push_back(d);
  return out;
}

const Descriptor& Image::object(std::uint32_t id) const {
  for (const Descriptor& d : slots_)
    if (d.used && d.id == id) return d;
  throw FormatError(path_ + ": no object with ID " + std::to_string(id) + " (see `capsa sif list " + path_ + "`)");
}

const Descriptor* Image::primary_partition() const {
  for (const Descriptor& d : slots_)
    if (d.used && d.data_type == DataType::Partition && d.partition().part_type == PartType::PrimSys) return &d;
  return nullptr;
}

std::string Image::read_object(const Descriptor& d, std::uint64_t max_bytes) const {
  auto size = static_cast<std::uint64_t>(d.size);
  if (size > max_bytes)
    throw FormatError(path_ + ": " + object_label(d) + " is " + std::to_string(size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " expected for it");
  std::string out(size, '\0');
  read_exact_at(fd_.get(), std::span(reinterpret_cast<std::uint8_t*>(out.data()), out.size()),
                static_cast<std::uint64_t>(d.offset), object_label(d));
  return out;
}

void Image::copy_object_to(const Descriptor& d, int out_fd) const {
  copy_range_to(fd_.get(), static_cast<std::uint64_t>(d.offset), static_cast<std::uint64_t>(d.size), out_fd);
}

bool looks_like_sif(const std::string& path) {
  try {
    UniqueFd fd = open_file(path, O_RDONLY);
    std::array<std::uint8_t, 42> start{};
    read_exact_at(fd.get(), start, 0, "header");
    return std::memcmp(start.data() + kLaunchScriptSize, kMagic.data(), kMagic.size()) == 0;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace capsa::sif
