#pragma once
// The shell scripts capsa writes into /.singularity.d. They are capsa's own and follow
// the conventions of Singularity/Apptainer images (file names, variables, order of
// environment files) so that any of those runtimes can run a capsa-made image.
#include <string_view>

namespace capsa::image::scripts {

// Sources every environment file in name order, as every action script must.
#define CAPSA_SOURCE_ENV                                    \
  "for capsa_env in /.singularity.d/env/*.sh; do\n"         \
  "    [ -f \"$capsa_env\" ] && . \"$capsa_env\"\n"         \
  "done\n"                                                  \
  "unset capsa_env\n"

inline constexpr std::string_view kActionExec =
    "#!/bin/sh\n" CAPSA_SOURCE_ENV
    "exec \"$@\"\n";

inline constexpr std::string_view kActionRun =
    "#!/bin/sh\n" CAPSA_SOURCE_ENV
    "app=\"${APPTAINER_APPNAME:-${SINGULARITY_APPNAME:-}}\"\n"
    "if [ -n \"$app\" ]; then\n"
    "    if [ -x \"/scif/apps/$app/scif/runscript\" ]; then\n"
    "        exec \"/scif/apps/$app/scif/runscript\" \"$@\"\n"
    "    fi\n"
    "    echo \"no runscript for the app $app in this container\" >&2\n"
    "    exit 1\n"
    "fi\n"
    "if [ -x /.singularity.d/runscript ]; then\n"
    "    exec /.singularity.d/runscript \"$@\"\n"
    "fi\n"
    "echo \"no runscript in this container: running /bin/sh\" >&2\n"
    "exec /bin/sh \"$@\"\n";

inline constexpr std::string_view kActionShell =
    "#!/bin/sh\n" CAPSA_SOURCE_ENV
    "want=\"${APPTAINER_SHELL:-${SINGULARITY_SHELL:-}}\"\n"
    "if [ -n \"$want\" ] && [ -x \"$want\" ]; then\n"
    "    exec \"$want\" \"$@\"\n"
    "fi\n"
    "if [ -x /bin/bash ]; then\n"
    "    SHELL=/bin/bash\n"
    "    export SHELL\n"
    "    exec /bin/bash --norc \"$@\"\n"
    "fi\n"
    "if [ -x /bin/sh ]; then\n"
    "    SHELL=/bin/sh\n"
    "    export SHELL\n"
    "    exec /bin/sh \"$@\"\n"
    "fi\n"
    "echo \"no shell in this container (/bin/sh is missing)\" >&2\n"
    "exit 1\n";

inline constexpr std::string_view kActionStart =
    "#!/bin/sh\n" CAPSA_SOURCE_ENV
    "if [ -x /.singularity.d/startscript ]; then\n"
    "    exec /.singularity.d/startscript \"$@\"\n"
    "fi\n";

inline constexpr std::string_view kActionTest =
    "#!/bin/sh\n" CAPSA_SOURCE_ENV
    "if [ -x /.singularity.d/test ]; then\n"
    "    exec /.singularity.d/test \"$@\"\n"
    "fi\n"
    "echo \"no test script in this container\" >&2\n"
    "exit 0\n";

#undef CAPSA_SOURCE_ENV

inline constexpr std::string_view kEnvBase =
    "#!/bin/sh\n"
    "# Base environment of the container: nothing to set. Later files in this directory\n"
    "# are sourced in name order: 10-docker2singularity.sh (the image's ENV),\n"
    "# 90-environment.sh (%environment), 99-base.sh, 99-runtimevars.sh.\n";

// The first line is the marker that `build` appends %environment sections after.
inline constexpr std::string_view kEnvEnvironment =
    "#!/bin/sh\n"
    "# Custom environment shell code should follow\n\n";

// SCIF apps: with --app NAME, the app's bin and lib first, its 01-base.sh (SCIF_APPNAME,
// SCIF_APPROOT, SCIF_APPDATA, ...) and 90-environment.sh (%appenv) sourced, as Apptainer's
// 95-apps.sh does; and the other names Apptainer's help promises for the active app
// (SCIF_APPBIN, SCIF_APPLIB, SCIF_APPENV, SCIF_APPLABELS, SCIF_APPRUN, SCIF_APPTEST,
// SCIF_APPHELP), each set where its directory or file exists.
inline constexpr std::string_view kEnvApps =
    "#!/bin/sh\n"
    "app=\"${SINGULARITY_APPNAME:-${APPTAINER_APPNAME:-}}\"\n"
    "if [ -n \"$app\" ] && [ -d \"/scif/apps/$app\" ]; then\n"
    "    SCIF_APPS=/scif/apps\n"
    "    SCIF_APPROOT=\"/scif/apps/$app\"\n"
    "    export SCIF_APPS SCIF_APPROOT\n"
    "    PATH=\"$SCIF_APPROOT:$PATH\"\n"
    "    if [ -d \"$SCIF_APPROOT/bin\" ]; then\n"
    "        PATH=\"$SCIF_APPROOT/bin:$PATH\"\n"
    "        SCIF_APPBIN=\"$SCIF_APPROOT/bin\"; export SCIF_APPBIN\n"
    "    fi\n"
    "    if [ -d \"$SCIF_APPROOT/lib\" ]; then\n"
    "        LD_LIBRARY_PATH=\"$SCIF_APPROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n"
    "        SCIF_APPLIB=\"$SCIF_APPROOT/lib\"; export SCIF_APPLIB LD_LIBRARY_PATH\n"
    "    fi\n"
    "    [ -f \"$SCIF_APPROOT/scif/env/01-base.sh\" ] && . \"$SCIF_APPROOT/scif/env/01-base.sh\"\n"
    "    if [ -f \"$SCIF_APPROOT/scif/env/90-environment.sh\" ]; then\n"
    "        SCIF_APPENV=\"$SCIF_APPROOT/scif/env/90-environment.sh\"; export SCIF_APPENV\n"
    "        . \"$SCIF_APPENV\"\n"
    "    fi\n"
    "    [ -f \"$SCIF_APPROOT/scif/labels.json\" ] && SCIF_APPLABELS=\"$SCIF_APPROOT/scif/labels.json\" && export "
    "SCIF_APPLABELS\n"
    "    [ -f \"$SCIF_APPROOT/scif/runscript\" ] && SCIF_APPRUN=\"$SCIF_APPROOT/scif/runscript\" && export "
    "SCIF_APPRUN\n"
    "    [ -f \"$SCIF_APPROOT/scif/test\" ] && SCIF_APPTEST=\"$SCIF_APPROOT/scif/test\" && export SCIF_APPTEST\n"
    "    [ -f \"$SCIF_APPROOT/scif/runscript.help\" ] && SCIF_APPHELP=\"$SCIF_APPROOT/scif/runscript.help\" && export "
    "SCIF_APPHELP\n"
    "    export PATH\n"
    "fi\n"
    "unset app\n";

// Host libraries bound by --nv land in /.singularity.d/libs: it goes last on the search
// path so the container's own libraries still win.
inline constexpr std::string_view kEnvFinal =
    "#!/bin/sh\n"
    "LD_LIBRARY_PATH=\"${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/.singularity.d/libs\"\n"
    "PS1=\"${PS1:-Apptainer> }\"\n"
    "export LD_LIBRARY_PATH PS1\n";

// PATH changes the user asked for (APPTAINERENV_PREPEND_PATH and friends) are applied
// last, after the image's own environment.
inline constexpr std::string_view kEnvRuntimeVars =
    "#!/bin/sh\n"
    "[ -n \"${SING_USER_DEFINED_PREPEND_PATH:-}\" ] && PATH=\"$SING_USER_DEFINED_PREPEND_PATH:$PATH\"\n"
    "[ -n \"${SING_USER_DEFINED_APPEND_PATH:-}\" ] && PATH=\"$PATH:$SING_USER_DEFINED_APPEND_PATH\"\n"
    "[ -n \"${SING_USER_DEFINED_PATH:-}\" ] && PATH=\"$SING_USER_DEFINED_PATH\"\n"
    "unset SING_USER_DEFINED_PREPEND_PATH SING_USER_DEFINED_APPEND_PATH SING_USER_DEFINED_PATH\n"
    "export PATH\n";

// After OCI_ENTRYPOINT and OCI_CMD: Docker's rules for combining them with the
// arguments. ENTRYPOINT and CMD get one round of shell evaluation, as Apptainer gives
// them; the user's arguments are passed on unchanged. The `eval "set ..."` line is the
// one Apptainer recognises to run a docker runscript without /bin/sh in the image.
inline constexpr std::string_view kDockerRunscriptBody =
    "if [ $# -gt 0 ]; then\n"
    "    SINGULARITY_OCI_RUN=\"-- ${OCI_ENTRYPOINT} \\\"\\$@\\\"\"\n"
    "else\n"
    "    SINGULARITY_OCI_RUN=\"-- ${OCI_ENTRYPOINT} ${OCI_CMD}\"\n"
    "fi\n"
    "eval \"set ${SINGULARITY_OCI_RUN}\"\n"
    "if [ $# -eq 0 ]; then\n"
    "    echo \"this image has no ENTRYPOINT or CMD: give the command to run\" >&2\n"
    "    exit 1\n"
    "fi\n"
    "exec \"$@\"\n";

}  // namespace capsa::image::scripts
