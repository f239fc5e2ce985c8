#include "build/encrypted_sif.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/host_ops.hpp"
#include "encryption/gocryptfs.hpp"
#include "encryption/wrapped_key.hpp"
#include "runtime/sandbox_run.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::build {
namespace {

// "squashfs-" and digits, as Apptainer's temporary file is named: its runtime finds the
// inner image by that prefix.
std::string inner_name() {
  unsigned char bytes[4];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error("cannot draw a random name (OpenSSL's RAND_bytes failed)");
  std::uint32_t n = 0;
  for (unsigned char b : bytes) n = (n << 8) | b;
  return "squashfs-" + std::to_string(n);
}

}  // namespace

void write_encrypted_sif(const EncryptedSifRequest& request) {
  const encryption::KeyMaterial& key = request.key;
  encryption::gocryptfs_program();  // missing: said before anything is packed
  BuildDirectory work(request.work_parent, "capsa-encrypt-", runtime::RootMode::real_root);
  const std::string plain = work / "plain.sqfs";
  {
    UniqueFd out = open_file(plain, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    std::uint64_t size = runtime::pack_sandbox(request.rootfs, out.get(), 0, request.mode, request.pack);
    if (::ftruncate(out.get(), static_cast<off_t>(size)) != 0) throw_errno(plain);
  }
  std::string secret =
      key.kind == encryption::KeyMaterial::Kind::Passphrase ? key.passphrase : encryption::new_random_secret();
  const std::string cipher = work / "cipher";
  if (::mkdir(cipher.c_str(), 0700) != 0) throw_errno(cipher);
  encryption::encrypt_into_directory(plain, cipher, inner_name(), secret);
  ::unlink(plain.c_str());  // the disk holds one copy of the image at a time
  std::string wrapped;
  if (key.kind != encryption::KeyMaterial::Kind::Passphrase) wrapped = encryption::wrap_secret(key, secret);
  std::fill(secret.begin(), secret.end(), '\0');

  // The outer squashfs: gzip, as Apptainer writes it (-comp gzip, -noD -noF); the
  // encrypted data does not compress, and libsquashfs stores such blocks as they are.
  convert::PackOptions outer;
  outer.compression = "gzip";
  outer.force_uid = 0;
  outer.force_gid = 0;
  outer.threads = request.pack.threads;
  const std::string partition = work / "partition.sqfs";
  {
    UniqueFd out = open_file(partition, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    std::uint64_t size = convert::pack_directory(cipher, out.get(), 0, outer);
    if (::ftruncate(out.get(), static_cast<off_t>(size)) != 0) throw_errno(partition);
  }
  std::vector<sif::ObjectInput> objects = request.leading_objects;
  objects.push_back(
      sif::partition_input(partition, sif::FsType::GocryptfsSquashfs, sif::PartType::PrimSys, request.architecture));
  if (!wrapped.empty()) {
    // Linked to the partition by its ID: objects are numbered from 1 in this order.
    sif::ObjectInput message;
    message.type = sif::DataType::CryptoMessage;
    message.data = wrapped;
    message.linked_id = static_cast<std::uint32_t>(objects.size());
    sif::Descriptor extra;
    extra.set_crypto_message(sif::FormatType::Pem, sif::MessageType::RsaOaep);
    message.extra = extra.extra;
    objects.push_back(std::move(message));
  }
  sif::create(request.target, request.create, objects);
}

}  // namespace capsa::build
