#pragma once
// The org.opencontainers.image.created annotation Apptainer puts on an oras:// manifest
// (internal/pkg/client/oras/oras.go, ImageCreated): the label of that name in the SIF's
// inspect-metadata.json object (data.attributes.labels, pkg/inspect/metadata.go); nothing when that object exists
// without the label; the current time when the SIF has no such object.

#include <optional>
#include <string>

#include "sif/image.hpp"

namespace capsa::push {

std::optional<std::string> sif_created(const sif::Image& image);

}  // namespace capsa::push
