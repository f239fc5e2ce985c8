#pragma once
// --passphrase and --pem-path, for build (the key to encrypt with) and the actions (the
// key to run with), as Apptainer's (cmd/internal/cli/build_linux.go: getEncryptionMaterial).
//
// Reading the flags and the environment needs no OpenSSL (encryption_flags.cpp); checking
// a PEM key and opening a wrapped secret do. The lean runner links no OpenSSL (see
// forward.hpp): its set_run_key (encryption_key_forward.cpp) hands a run with a PEM key to
// capsa-full, whose own (encryption_key_full.cpp) checks the key before anything is mounted.
#include <CLI/CLI.hpp>
#include <optional>

#include "encryption/key_material.hpp"
#include "runtime/launch.hpp"

namespace capsa::cli {

// Adds both flags to `command`; `for_build` picks the help text (public or private key).
void add_encryption_flags(CLI::App& command, encryption::KeyFlags& flags, bool for_build);

// The key the flags and the environment name, unchecked; nullopt when none. --passphrase
// asks on the terminal, or reads one line of standard input when there is none (as
// Apptainer does).
std::optional<encryption::KeyMaterial> key_from_flags(const encryption::KeyFlags& flags);

// The actions: the key to run an encrypted image with, into `r` (a PEM file checked to
// hold an RSA private key, and the means to open the image's wrapped secret with it).
void set_run_key(const encryption::KeyFlags& flags, runtime::ActionRequest& r);

// build (capsa-full only): the key to encrypt with, a PEM file checked to hold an RSA
// public key; nullopt when none.
std::optional<encryption::KeyMaterial> build_key(const encryption::KeyFlags& flags);

}  // namespace capsa::cli
