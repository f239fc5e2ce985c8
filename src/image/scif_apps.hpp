#pragma once
// The SCIF apps an image holds (/scif/apps/NAME with a scif/ metadata directory, the rule
// of Apptainer's inspect), for `inspect --list-apps`, `--app NAME` of inspect and
// run-help, and the actions' --app.

#include <string>
#include <vector>

#include "image/image_files.hpp"

namespace capsa::image {

// Names of the apps, sorted.
std::vector<std::string> list_apps(const ImageFiles& files);

// Throws Error "no SCIF app \"NAME\" in IMAGE (its apps: ...)" unless the image has it.
void require_app(const ImageFiles& files, const std::string& app, const std::string& image);

// Where an app's metadata lives: /scif/apps/NAME/scif.
std::string app_metadata_dir(const std::string& app);

}  // namespace capsa::image
