#pragma once
// `capsa build --encrypt`: the SIF Apptainer 1.4 makes for an unprivileged build
// (internal/pkg/build/assemblers/sif.go with packer/gocryptfs.go), which any user can
// run: the root file system's squashfs, encrypted by gocryptfs into a directory with
// gocryptfs.conf (encryption/gocryptfs.hpp), that directory packed as a second squashfs
// (data stored, not compressed: it is ciphertext) in a partition of FsType 6,
// "Gocryptfs squashfs"; with an RSA key, the random secret gocryptfs got wrapped for it
// in a CryptoMessage descriptor (PEM, RSA-OAEP) linked to the partition. capsa makes
// this format as root too: Apptainer's root format (LUKS2 through dm-crypt) needs a
// device mapper, and an image made that way runs only where root or setuid is.
#include <string>
#include <vector>

#include "convert/pack.hpp"
#include "encryption/key_material.hpp"
#include "runtime/root_mode.hpp"
#include "sif/writer.hpp"

namespace capsa::build {

struct EncryptedSifRequest {
  std::string rootfs;
  std::string target;
  std::string work_parent;                        // where the temporary files go
  std::vector<sif::ObjectInput> leading_objects;  // the definition file, the inspect metadata
  sif::CreateOptions create;
  std::string architecture;
  runtime::RootMode mode{};
  convert::PackOptions pack;  // for the inner squashfs, as for a plain image
  encryption::KeyMaterial key;
};

// Writes the SIF (temporary name + rename); throws Error and leaves nothing behind.
void write_encrypted_sif(const EncryptedSifRequest& request);

}  // namespace capsa::build
