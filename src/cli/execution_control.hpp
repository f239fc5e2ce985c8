#pragma once
// The administrator's execution control list (ecl/), applied to every image a command
// runs: exec, run, shell, test and instance start, SIF files, sandboxes, and the SIFs
// the cache holds for docker://, oras:// and library:// references. Root included, as in
// Apptainer: the list is the site's word on what runs.
#include <string>

namespace capsa::cli {

// Throws capsa::Error (one line) when the list forbids `image`. execution_control.cpp
// (capsa-full) checks; execution_control_forward.cpp (the lean runner, which links
// neither GPGME nor the TOML parser) hands the command to capsa-full when a list exists.
void check_execution_control(const std::string& image);

}  // namespace capsa::cli
