#!/bin/sh
# Custom environment shell code should follow

