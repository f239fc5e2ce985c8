// Fuzzes the SIF reader and everything that renders what it read: any input must either
// be rejected with capsa::Error or be fully readable, never crash, leak or hang.
#include <cstdint>

#include "memfd_input.hpp"
#include "sif/image.hpp"
#include "sif/report.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capsa::fuzz::MemfdInput input(data, size);
  try {
    auto image = capsa::sif::Image::open(input.path());
    (void)capsa::sif::header_report(image);
    (void)capsa::sif::list_report(image);
    for (const auto& d : image.objects()) {
      (void)capsa::sif::info_report(d);
      if (d.size <= 4096) (void)image.read_object(d);
    }
    (void)image.primary_partition();
  } catch (const capsa::Error&) {
    // Rejected cleanly: the expected outcome for most inputs.
  }
  return 0;
}
