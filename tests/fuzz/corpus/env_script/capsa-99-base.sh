#!/bin/sh
LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/.singularity.d/libs"
PS1="${PS1:-Apptainer> }"
export LD_LIBRARY_PATH PS1
