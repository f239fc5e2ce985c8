// The volume secret wrapped for an RSA key as Apptainer's cryptkey package does it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encryption/key_material.hpp"
#include "encryption/wrapped_key.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::encryption {
namespace {

struct KeyPair {
  KeyMaterial public_key, private_key;
};

// As Apptainer's documentation makes them: a PKCS#1 private key and its PKCS#1 public key.
KeyPair make_pair(const test::TempDir& dir, const std::string& name, int bits = 2048) {
  const std::string priv = dir / (name + ".pem"), pub = dir / (name + "-pub.pem");
  EXPECT_EQ(test::run_process({"openssl", "genrsa", "-traditional", "-out", priv, std::to_string(bits)}).exit_code, 0);
  EXPECT_EQ(test::run_process({"openssl", "rsa", "-in", priv, "-RSAPublicKey_out", "-out", pub}).exit_code, 0);
  KeyPair pair;
  pair.public_key = {KeyMaterial::Kind::PemFile, "", pub, "", "--pem-path"};
  pair.private_key = {KeyMaterial::Kind::PemFile, "", priv, "", "--pem-path"};
  return pair;
}

TEST(WrappedKey, RoundTripsAndLooksLikeApptainers) {
  test::TempDir dir;
  KeyPair keys = make_pair(dir, "rsa");
  const std::string secret = new_random_secret();
  EXPECT_EQ(secret.size(), 32u);
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos);
  const std::string message = wrap_secret(keys.public_key, secret);
  EXPECT_TRUE(message.starts_with("-----BEGIN MESSAGE-----\n")) << message;
  EXPECT_EQ(unwrap_secret(keys.private_key, message, "image.sif"), secret);
  // The DER inside is one OCTET STRING of one 256-byte RSA block (2048-bit key).
  const std::string der_file = dir / "message.der";
  dir.write("message.pem", message);
  auto parsed = test::run_process({"openssl", "asn1parse", "-in", dir / "message.pem"});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.err;
  EXPECT_NE(parsed.out.find("OCTET STRING"), std::string::npos) << parsed.out;
  EXPECT_NE(parsed.out.find("l= 256"), std::string::npos) << parsed.out;
}

// The RSA-OAEP parameters checked against another implementation, the openssl program:
// SHA-256 for the digest and for MGF1, no label, as Go's rsa.EncryptOAEP(sha256.New(), ...)
// in Apptainer's cryptkey package. Each side reads what the other wrote.
TEST(WrappedKey, OpenSslsOaepWithSha256ReadsItAndWritesWhatItReads) {
  test::TempDir dir;
  KeyPair keys = make_pair(dir, "rsa");
  const std::vector<std::string> oaep = {"-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256",
                                         "-pkeyopt", "rsa_mgf1_md:sha256"};
  const std::string secret = new_random_secret();
  dir.write("message.pem", wrap_secret(keys.public_key, secret));
  // The PEM's DER (its base64 body, between the armour lines): one OCTET STRING
  // (04 82 01 00: 256 bytes) holding the ciphertext.
  const std::string pem = test::read_file(dir / "message.pem");
  const std::size_t start = pem.find('\n') + 1;
  const std::string body = pem.substr(start, pem.find("-----END") - start);
  dir.write("body.b64", body);
  auto decoded = test::run_process({"openssl", "base64", "-d", "-in", dir / "body.b64", "-out", dir / "message.der"});
  ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
  const std::string message_der = test::read_file(dir / "message.der");
  ASSERT_EQ(message_der.size(), 260u);
  ASSERT_EQ(message_der.substr(0, 4), std::string("\x04\x82\x01\x00", 4));
  dir.write("cipher.bin", message_der.substr(4));
  std::vector<std::string> decrypt = {"openssl", "pkeyutl",         "-decrypt", "-inkey", keys.private_key.pem_path,
                                      "-in",     dir / "cipher.bin"};
  decrypt.insert(decrypt.end(), oaep.begin(), oaep.end());
  auto opened = test::run_process(decrypt);
  ASSERT_EQ(opened.exit_code, 0) << opened.err;
  EXPECT_EQ(opened.out, secret);

  // The other way: what openssl wrapped, in Apptainer's PEM MESSAGE form, is unwrapped.
  dir.write("theirs.txt", "fedcba9876543210fedcba9876543210");
  std::vector<std::string> encrypt = {
      "openssl", "pkeyutl",          "-encrypt", "-pubin",          "-inkey", keys.public_key.pem_path,
      "-in",     dir / "theirs.txt", "-out",     dir / "theirs.bin"};
  encrypt.insert(encrypt.end(), oaep.begin(), oaep.end());
  ASSERT_EQ(test::run_process(encrypt).exit_code, 0);
  dir.write("theirs.der", std::string("\x04\x82\x01\x00", 4) + test::read_file(dir / "theirs.bin"));
  auto armoured = test::run_process({"openssl", "base64", "-in", dir / "theirs.der"});
  ASSERT_EQ(armoured.exit_code, 0) << armoured.err;
  const std::string theirs = "-----BEGIN MESSAGE-----\n" + armoured.out + "-----END MESSAGE-----\n";
  EXPECT_EQ(unwrap_secret(keys.private_key, theirs, "image.sif"), "fedcba9876543210fedcba9876543210");
}

TEST(WrappedKey, LongSecretsAreCutInPiecesAsApptainerDoes) {
  test::TempDir dir;
  KeyPair keys = make_pair(dir, "small", 1024);  // 62 bytes a piece
  const std::string secret(150, 'x');
  const std::string message = wrap_secret(keys.public_key, secret);
  EXPECT_EQ(unwrap_secret(keys.private_key, message, "image.sif"), secret);
}

TEST(WrappedKey, TheWrongPrivateKeySaysSoInOneLine) {
  test::TempDir dir;
  KeyPair right = make_pair(dir, "right"), wrong = make_pair(dir, "wrong");
  const std::string message = wrap_secret(right.public_key, "0123456789abcdef0123456789abcdef");
  try {
    unwrap_secret(wrong.private_key, message, "image.sif");
    FAIL() << "the wrong key decrypted the secret";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("does not decrypt image.sif"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(WrappedKey, KeysOfTheWrongKindAreRefusedBeforeUse) {
  test::TempDir dir;
  KeyPair keys = make_pair(dir, "rsa");
  EXPECT_NO_THROW(check_public_key(keys.public_key));
  EXPECT_NO_THROW(check_private_key(keys.private_key));
  EXPECT_THROW(check_private_key(keys.public_key), Error);
  KeyMaterial junk{KeyMaterial::Kind::PemFile, "", dir.write("junk.pem", "not a key\n"), "", "--pem-path"};
  EXPECT_THROW(check_public_key(junk), Error);
  // SubjectPublicKeyInfo ("PUBLIC KEY") works as well as PKCS#1.
  const std::string spki = dir / "spki.pem";
  ASSERT_EQ(test::run_process({"openssl", "rsa", "-in", keys.private_key.pem_path, "-pubout", "-out", spki}).exit_code,
            0);
  KeyMaterial spki_key{KeyMaterial::Kind::PemFile, "", spki, "", "--pem-path"};
  EXPECT_EQ(unwrap_secret(keys.private_key, wrap_secret(spki_key, "s3cret"), "image.sif"), "s3cret");
}

}  // namespace
}  // namespace capsa::encryption
