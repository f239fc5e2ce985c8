#include "image/scif_apps.hpp"

#include "util/error.hpp"

namespace capsa::image {

std::string app_metadata_dir(const std::string& app) { return "/scif/apps/" + app + "/scif"; }

std::vector<std::string> list_apps(const ImageFiles& files) {
  std::vector<std::string> apps;
  auto names = files.list_directory("/scif/apps");
  if (!names) return apps;
  for (const std::string& name : *names)
    if (files.list_directory(app_metadata_dir(name))) apps.push_back(name);
  return apps;  // list_directory sorts
}

void require_app(const ImageFiles& files, const std::string& app, const std::string& image) {
  // A name with a slash would look elsewhere than /scif/apps; none is ever an app.
  if (app.find('/') == std::string::npos && app != "." && app != ".." && files.list_directory(app_metadata_dir(app)))
    return;
  std::vector<std::string> apps = list_apps(files);
  std::string known;
  for (const std::string& name : apps) known += (known.empty() ? "" : ", ") + name;
  throw Error("no SCIF app \"" + app + "\" in " + image +
              (apps.empty() ? " (it has no SCIF apps)" : " (its apps: " + known + ")"));
}

}  // namespace capsa::image
