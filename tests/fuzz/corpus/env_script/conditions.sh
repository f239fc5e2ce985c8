#!/bin/sh
if [ -z "$LD_LIBRARY_PATH" ]; then LD_LIBRARY_PATH=/.singularity.d/libs; elif [ "$X" != y ]; then :; else LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/x"; fi
[ -d /etc ] && export A="${B:-"c d"}" || export A=${B:+e}
export PATH="/opt/bin:$PATH" \
  HOME
unset A
