#include "push/sif_created.hpp"

#include <ctime>
#include <nlohmann/json.hpp>

#include "sif/format.hpp"
#include "util/rfc3339.hpp"

namespace capsa::push {

std::optional<std::string> sif_created(const sif::Image& image) {
  std::optional<std::string> created = rfc3339_utc(std::time(nullptr));
  for (const sif::Descriptor& d : image.objects()) {
    if (d.data_type != sif::DataType::GenericJson || d.name_text() != "inspect-metadata.json") continue;
    const auto metadata = nlohmann::json::parse(image.read_object(d, 16 << 20), nullptr, false);
    created.reset();
    if (!metadata.is_object()) continue;
    const auto data = metadata.find("data");
    if (data == metadata.end() || !data->is_object()) continue;
    const auto attributes = data->find("attributes");
    if (attributes == data->end() || !attributes->is_object()) continue;
    const auto labels = attributes->find("labels");
    if (labels == attributes->end() || !labels->is_object()) continue;
    const auto label = labels->find("org.opencontainers.image.created");
    if (label != labels->end() && label->is_string() && !label->get<std::string>().empty())
      created = label->get<std::string>();
  }
  return created;
}

}  // namespace capsa::push
