#include "build/stage_apps.hpp"

#include <regex>
#include <sstream>

#include "build/root_files.hpp"
#include "build/stage_files.hpp"
#include "image/container_files.hpp"
#include "util/log.hpp"

namespace capsa::build {
namespace {

// Variable names take the app's name with anything but [A-Za-z0-9_] made '_'. Apptainer
// also uses that form in the paths it writes, which then name no directory for an app
// called "my-app"; capsa writes the real paths.
std::string variable_suffix(const std::string& name) {
  static const std::regex other("[^A-Za-z0-9_]");
  return std::regex_replace(name, other, "_");
}

std::string base_environment(const std::string& name) {
  const std::string root = "/scif/apps/" + name, data = "/scif/data/" + name;
  return "#!/bin/sh\n\n"
         "SCIF_APPNAME=" +
         name +
         "\n"
         "SCIF_APPROOT=\"" +
         root +
         "\"\n"
         "SCIF_APPMETA=\"" +
         root +
         "/scif\"\n"
         "SCIF_DATA=\"/scif/data\"\n"
         "SCIF_APPDATA=\"" +
         data +
         "\"\n"
         "SCIF_APPINPUT=\"" +
         data +
         "/input\"\n"
         "SCIF_APPOUTPUT=\"" +
         data +
         "/output\"\n"
         "export SCIF_APPDATA SCIF_APPNAME SCIF_APPROOT SCIF_APPMETA SCIF_APPINPUT SCIF_APPOUTPUT SCIF_DATA\n";
}

// The script files Apptainer writes for %apprun and %apptest: no #! line of the user's.
std::string app_script(const Script& script) { return "#!/bin/sh\n\n" + script.body + "\n"; }

bool has_body(const Script& script) { return script.present && !script.body.empty(); }

void write_app(const App& app) {
  const std::string root = "/scif/apps/" + app.name, meta = root + "/scif";
  for (const std::string& dir : {meta + "/env", root + "/bin", root + "/lib", "/scif/data/" + app.name + "/input",
                                 "/scif/data/" + app.name + "/output"})
    make_directories(dir, 0755);
  write_text(meta + "/env/01-base.sh", base_environment(app.name), 0755);
  if (has_body(app.env)) write_text(meta + "/env/90-environment.sh", app.env.body, 0755);
  if (has_body(app.run)) write_text(meta + "/runscript", app_script(app.run), 0755);
  if (has_body(app.test)) write_text(meta + "/test", app_script(app.test), 0755);
  if (has_body(app.help)) write_text(meta + "/runscript.help", app.help.body, 0644);
  std::map<std::string, std::string> labels = {{"SCIF_APP_NAME", app.name}};
  for (const auto& [key, value] : app.labels) labels[key] = value;
  write_text(meta + "/labels.json", image::labels_json(labels), 0644);
}

}  // namespace

std::string apps_base_environment(const Stage& stage) {
  std::ostringstream text;
  for (const App& app : stage.apps) {
    const std::string n = variable_suffix(app.name), root = "/scif/apps/" + app.name;
    text << "## App Global Exports For: " << n << "\n\t\n"
         << "SCIF_APPDATA_" << n << "=/scif/data/" << app.name << "\n"
         << "SCIF_APPMETA_" << n << "=" << root << "/scif\n"
         << "SCIF_APPROOT_" << n << "=" << root << "\n"
         << "SCIF_APPBIN_" << n << "=" << root << "/bin\n"
         << "SCIF_APPLIB_" << n << "=" << root << "/lib\n\n"
         << "export SCIF_APPDATA_" << n << " SCIF_APPMETA_" << n << " SCIF_APPROOT_" << n << " SCIF_APPBIN_" << n
         << " SCIF_APPLIB_" << n << "\n";
    if (has_body(app.env)) text << "export SCIF_APPENV_" << n << "=\"" << root << "/scif/env/90-environment.sh\"\n";
    text << "export SCIF_APPLABELS_" << n << "=\"" << root << "/scif/labels.json\"\n";
    if (has_body(app.run)) text << "export SCIF_APPRUN_" << n << "=\"" << root << "/scif/runscript\"\n";
  }
  return text.str();
}

void write_apps(runtime::RootMode mode, const std::string& rootfs, const Stage& stage, const std::string& file) {
  const std::string base = apps_base_environment(stage);
  in_chroot(mode, rootfs, "write the SCIF apps in " + rootfs, [&] {
    for (const App& app : stage.apps) write_app(app);
    write_text("/.singularity.d/env/94-appsbase.sh", base, 0755);
  });
  for (const App& app : stage.apps) {
    if (app.start.present)
      log::warning(file + ":" + std::to_string(app.start.line) + ": %appstart " + app.name +
                   " is ignored, as Apptainer ignores it (instances start /.singularity.d/startscript)");
    if (app.files.empty()) continue;
    FilesBlock block;
    block.section = "%appfiles " + app.name;
    for (FileCopy copy : app.files) {
      // Relative to the app's root, also when written absolute (filepath.Join in Apptainer).
      const auto first = copy.destination.find_first_not_of('/');
      copy.destination =
          "/scif/apps/" + app.name + "/" + (first == std::string::npos ? "" : copy.destination.substr(first));
      block.copies.push_back(std::move(copy));
    }
    copy_files(mode, rootfs, block, "", file);
  }
}

Script post_with_app_installs(const Stage& stage) {
  Script post = stage.post;
  for (const App& app : stage.apps) {
    if (!post.present) post.present = true;
    const std::string root = "/scif/apps/" + app.name;
    std::ostringstream install;
    install << "\ncd /\n. " << root << "/scif/env/01-base.sh\n\ncd " << root << "\n" << app.install.body << "\ncd /\n";
    post.body += install.str();
  }
  return post;
}

}  // namespace capsa::build
