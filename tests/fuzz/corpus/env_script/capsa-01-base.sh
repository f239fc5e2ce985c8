#!/bin/sh
# Base environment of the container: nothing to set. Later files in this directory
# are sourced in name order: 10-docker2singularity.sh (the image's ENV),
# 90-environment.sh (%environment), 99-base.sh, 99-runtimevars.sh.
