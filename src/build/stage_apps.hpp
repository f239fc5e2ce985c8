#pragma once
// SCIF apps (https://sci-f.github.io) of a built stage, laid out as Apptainer lays them
// out (internal/pkg/build/apps/apps.go), so that either runtime runs them:
//   /scif/apps/NAME/           the app's root (its %appinstall runs here), with bin/ and lib/
//   /scif/apps/NAME/scif/      runscript (%apprun), test (%apptest), runscript.help
//                              (%apphelp), labels.json (%applabels), env/01-base.sh (the
//                              SCIF_* variables) and env/90-environment.sh (%appenv)
//   /scif/data/NAME/{input,output}
//   /.singularity.d/env/94-appsbase.sh   SCIF_APPDATA_NAME and friends, for every app
// Selected at run time with --app NAME (env/95-apps.sh and the action script).

#include <string>

#include "build/definition.hpp"
#include "runtime/sandbox_run.hpp"

namespace capsa::build {

// Writes every app's directories and files, and 94-appsbase.sh (empty without apps, as
// Apptainer rewrites it for each build); then copies each %appfiles from the host.
// `file` names the definition file in errors.
void write_apps(runtime::RootMode mode, const std::string& rootfs, const Stage& stage, const std::string& file);

// %post followed by each app's %appinstall, in the order the file names the apps, as
// Apptainer appends them: each in /scif/apps/NAME with the app's 01-base.sh sourced.
// Not present when there is neither.
Script post_with_app_installs(const Stage& stage);

// The text of 94-appsbase.sh for the stage's apps.
std::string apps_base_environment(const Stage& stage);

}  // namespace capsa::build
