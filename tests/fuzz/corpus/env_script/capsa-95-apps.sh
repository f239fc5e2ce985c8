#!/bin/sh
# SCIF apps: when an app is selected, put its bin and lib first and load its environment.
app="${APPTAINER_APPNAME:-${SINGULARITY_APPNAME:-}}"
if [ -n "$app" ] && [ -d "/scif/apps/$app" ]; then
    SCIF_APPS=/scif/apps
    SCIF_APPROOT="/scif/apps/$app"
    export SCIF_APPS SCIF_APPROOT
    PATH="$SCIF_APPROOT:$PATH"
    [ -d "$SCIF_APPROOT/bin" ] && PATH="$SCIF_APPROOT/bin:$PATH"
    if [ -d "$SCIF_APPROOT/lib" ]; then
        LD_LIBRARY_PATH="$SCIF_APPROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_LIBRARY_PATH
    fi
    for f in "$SCIF_APPROOT/scif/env/01-base.sh" "$SCIF_APPROOT/scif/env/90-environment.sh"; do
        [ -f "$f" ] && . "$f"
    done
    export PATH
fi
unset app
