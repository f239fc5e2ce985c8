#pragma once
// The administrator's execution control list (ecl/), applied to every image a command
// runs: exec, run, shell, test and instance start, SIF files, sandboxes, and the SIFs
// the cache holds for docker://, oras:// and library:// references. Root included, as in
// Apptainer: the list is the site's word on what runs.
#include <optional>
#include <string>

#include "util/file_identity.hpp"

namespace capsa::cli {

// Throws capsa::Error (one line) when the list forbids `image`; returns the identity of
// the file it judged (the run refuses another: runtime/launch.cpp), nullopt when no list
// is in force. execution_control.cpp (capsa-full) checks; execution_control_forward.cpp
// (the lean runner, which links neither GPGME nor the TOML parser) hands the command to
// capsa-full when a list exists.
std::optional<FileIdentity> check_execution_control(const std::string& image);

}  // namespace capsa::cli
