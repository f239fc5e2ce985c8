#pragma once
// The volume secret of an image encrypted for an RSA key, as Apptainer stores it
// (pkg/util/cryptkey/key.go): RSA-OAEP with SHA-256 (and MGF1 with SHA-256, no label),
// the secret cut in pieces of (key size - 66) bytes, the ciphertexts concatenated, as an
// ASN.1 OCTET STRING in a PEM block of type MESSAGE: the data of a CryptoMessage
// descriptor (format PEM, message RSA-OAEP) linked to the encrypted partition.
#include <string>

#include "encryption/key_material.hpp"

namespace capsa::encryption {

// The secret gocryptfs gets for an image made for an RSA key (with a passphrase it is
// the passphrase itself): random, then wrapped for the key.
std::string new_random_secret();

// `key`: the public key (PKCS#1 "RSA PUBLIC KEY", as Apptainer's documentation makes it
// with ssh-keygen, or "PUBLIC KEY"). Throws Error naming the key when it is not one.
std::string wrap_secret(const KeyMaterial& key, const std::string& secret);

// `key`: the private key (PKCS#1 or PKCS#8, not passphrase-protected). Throws Error
// "the private key ... does not decrypt ..." when it is the wrong key.
std::string unwrap_secret(const KeyMaterial& key, const std::string& message, const std::string& image);

// Throws Error unless `key` holds an RSA public key (build) or private key (run): checked
// before anything is built or mounted, as Apptainer does.
void check_public_key(const KeyMaterial& key);
void check_private_key(const KeyMaterial& key);

}  // namespace capsa::encryption
