// docker:// references as users write them: Docker Hub normalisation, registries with
// ports, digests, and the file name `pull` picks, as Apptainer does.
#include "reference/image_reference.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::reference {
namespace {

const std::string kHex = "77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e";

struct Case {
  std::string written;
  std::string registry, repository, tag, digest;  // "" for absent
  std::string canonical;                          // to_string()
  std::string sif_name;                           // default_sif_name()
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.written; }

class Valid : public testing::TestWithParam<Case> {};

TEST_P(Valid, ParsesAndNormalises) {
  const Case& c = GetParam();
  ImageReference r = parse_image_reference(c.written);
  EXPECT_EQ(r.registry, c.registry);
  EXPECT_EQ(r.repository, c.repository);
  EXPECT_EQ(r.tag.value_or(""), c.tag);
  EXPECT_EQ(r.digest ? r.digest->to_string() : "", c.digest);
  EXPECT_EQ(r.to_string(), c.canonical);
  EXPECT_EQ(r.default_sif_name(), c.sif_name);
  EXPECT_EQ(r.manifest_reference(), c.digest.empty() ? c.tag : c.digest);
  // The canonical form reads back as itself.
  EXPECT_EQ(parse_image_reference(r.to_string()).to_string(), c.canonical);
}

INSTANTIATE_TEST_SUITE_P(
    All, Valid,
    testing::Values(
        // Docker Hub: no registry, library/ for one-component names, aliases.
        Case{"docker://ubuntu", "docker.io", "library/ubuntu", "latest", "", "docker.io/library/ubuntu:latest",
             "ubuntu_latest.sif"},
        Case{"ubuntu", "docker.io", "library/ubuntu", "latest", "", "docker.io/library/ubuntu:latest",
             "ubuntu_latest.sif"},
        Case{"docker://ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", "", "docker.io/library/ubuntu:22.04",
             "ubuntu_22.04.sif"},
        Case{"docker://library/ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", "",
             "docker.io/library/ubuntu:22.04", "ubuntu_22.04.sif"},
        Case{"docker://docker.io/ubuntu", "docker.io", "library/ubuntu", "latest", "",
             "docker.io/library/ubuntu:latest", "ubuntu_latest.sif"},
        Case{"docker://index.docker.io/library/busybox:1.36", "docker.io", "library/busybox", "1.36", "",
             "docker.io/library/busybox:1.36", "busybox_1.36.sif"},
        Case{"docker://registry-1.docker.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "docker.io", "nvidia/cuda",
             "12.2.0-base-ubuntu22.04", "", "docker.io/nvidia/cuda:12.2.0-base-ubuntu22.04",
             "cuda_12.2.0-base-ubuntu22.04.sif"},
        Case{"docker://sylabsio/lolcow", "docker.io", "sylabsio/lolcow", "latest", "",
             "docker.io/sylabsio/lolcow:latest", "lolcow_latest.sif"},
        // Other registries, with and without ports; "localhost" is a host.
        Case{"docker://nvcr.io/nvidia/tensorflow:21.06-tf1-py3", "nvcr.io", "nvidia/tensorflow", "21.06-tf1-py3", "",
             "nvcr.io/nvidia/tensorflow:21.06-tf1-py3", "tensorflow_21.06-tf1-py3.sif"},
        Case{"docker://localhost:5000/busybox:1.0", "localhost:5000", "busybox", "1.0", "",
             "localhost:5000/busybox:1.0", "busybox_1.0.sif"},
        Case{"localhost/busybox", "localhost", "busybox", "latest", "", "localhost/busybox:latest",
             "busybox_latest.sif"},
        Case{"docker://127.0.0.1:5000/a/b/c:t", "127.0.0.1:5000", "a/b/c", "t", "", "127.0.0.1:5000/a/b/c:t",
             "c_t.sif"},
        Case{"docker://[::1]:5000/busybox", "[::1]:5000", "busybox", "latest", "", "[::1]:5000/busybox:latest",
             "busybox_latest.sif"},
        Case{"docker://ghcr.io/owner/repo.name_x__y-z---w:V1.2_rc-3", "ghcr.io", "owner/repo.name_x__y-z---w",
             "V1.2_rc-3", "", "ghcr.io/owner/repo.name_x__y-z---w:V1.2_rc-3", "repo.name_x__y-z---w_V1.2_rc-3.sif"},
        Case{"docker://my-registry.example.com:443/team/app", "my-registry.example.com:443", "team/app", "latest", "",
             "my-registry.example.com:443/team/app:latest", "app_latest.sif"},
        // Docker's rule: one component, so "localhost:5000" is name localhost, tag 5000.
        Case{"localhost:5000", "docker.io", "library/localhost", "5000", "", "docker.io/library/localhost:5000",
             "localhost_5000.sif"},
        // Digests: no default tag; the digest wins for the manifest request. Apptainer's
        // name keeps the digest split at its ':' (and drops it after a tag).
        Case{"docker://alpine@sha256:" + kHex, "docker.io", "library/alpine", "", "sha256:" + kHex,
             "docker.io/library/alpine@sha256:" + kHex, "alpine@sha256_" + kHex + ".sif"},
        Case{"docker://alpine:3.19@sha256:" + kHex, "docker.io", "library/alpine", "3.19", "sha256:" + kHex,
             "docker.io/library/alpine:3.19@sha256:" + kHex, "alpine_3.19@sha256.sif"},
        Case{"docker://localhost:5000/busybox@sha256:" + kHex, "localhost:5000", "busybox", "", "sha256:" + kHex,
             "localhost:5000/busybox@sha256:" + kHex, "busybox@sha256_" + kHex + ".sif"},
        Case{"quay.io/org/img@sha512:" + std::string(128, 'e'), "quay.io", "org/img", "",
             "sha512:" + std::string(128, 'e'), "quay.io/org/img@sha512:" + std::string(128, 'e'),
             "img@sha512_" + std::string(128, 'e') + ".sif"}));

struct Invalid {
  std::string written;
  std::string why;  // after `invalid image reference "<written>": `
};
void PrintTo(const Invalid& c, std::ostream* os) { *os << c.written; }

class Refused : public testing::TestWithParam<Invalid> {};

TEST_P(Refused, WithOneLineSayingWhy) {
  const Invalid& c = GetParam();
  try {
    parse_image_reference(c.written);
    FAIL() << "accepted " << c.written;
  } catch (const FormatError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos);
    std::string prefix = "invalid image reference \"";
    ASSERT_EQ(message.rfind(prefix, 0), 0u) << message;
    auto why_at = message.find("\": ", prefix.size());
    ASSERT_NE(why_at, std::string::npos) << message;
    EXPECT_EQ(message.substr(why_at + 3), c.why) << message;
  }
}

const std::string kRepositoryRule =
    " must be lower-case letters and digits, with '.', '_', '__' or '-' only between them, in '/'-separated "
    "components";
const std::string kTagRule = " must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'";

INSTANTIATE_TEST_SUITE_P(
    All, Refused,
    testing::Values(
        Invalid{"", "the reference is empty"}, Invalid{"docker://", "the reference is empty"},
        Invalid{"library://alpine:3.11", "transport \"library\" is not supported; capsa pulls docker:// references"},
        Invalid{"docker://oras://x/y", "transport \"oras\" is not supported; capsa pulls docker:// references"},
        Invalid{"Ubuntu", "repository \"Ubuntu\"" + kRepositoryRule},
        Invalid{"docker://nvcr.io/NVIDIA/pytorch", "repository \"NVIDIA/pytorch\"" + kRepositoryRule},
        Invalid{"foo//bar", "repository \"foo//bar\"" + kRepositoryRule},
        Invalid{"foo/bar/", "repository \"foo/bar/\"" + kRepositoryRule},
        Invalid{"a..b", "repository \"a..b\"" + kRepositoryRule},
        Invalid{"a___b", "repository \"a___b\"" + kRepositoryRule},
        Invalid{"-a", "repository \"-a\"" + kRepositoryRule}, Invalid{"a-", "repository \"a-\"" + kRepositoryRule},
        Invalid{"has space", "repository \"has space\"" + kRepositoryRule},
        Invalid{"nvcr.io/", "repository \"\"" + kRepositoryRule}, Invalid{"ubuntu:", "tag \"\"" + kTagRule},
        Invalid{"ubuntu:.hidden", "tag \".hidden\"" + kTagRule}, Invalid{"ubuntu:-x", "tag \"-x\"" + kTagRule},
        Invalid{"ubuntu:a+b", "tag \"a+b\"" + kTagRule},
        Invalid{"ubuntu:" + std::string(129, 't'), "tag \"" + std::string(129, 't') + "\"" + kTagRule},
        Invalid{"ubuntu@sha256:abc", "invalid digest \"sha256:abc\": sha256 needs 64 lower-case hex digits"},
        Invalid{"ubuntu@", "invalid digest \"\": expected algorithm:hex, e.g. sha256:<64 hex digits>"},
        Invalid{"ubuntu@md5:d41d8cd98f00b204e9800998ecf8427e",
                "invalid digest \"md5:d41d8cd98f00b204e9800998ecf8427e\": unsupported algorithm \"md5\" (capsa accepts "
                "sha256 and sha512)"},
        Invalid{"ubuntu@sha256:" + kHex + "@sha256:" + kHex,
                "invalid digest \"sha256:" + kHex + "@sha256:" + kHex +
                    "\": expected algorithm:hex, e.g. sha256:<64 hex digits>"},
        Invalid{"localhost:99999/x", "registry port \"99999\" is not a number from 1 to 65535"},
        Invalid{"localhost:/x", "registry port \"\" is not a number from 1 to 65535"},
        Invalid{"exa_mple.com/x", "registry \"exa_mple.com\" is not a valid host[:port]"},
        Invalid{"-bad.example.com/x", "registry \"-bad.example.com\" is not a valid host[:port]"},
        Invalid{"example..com/x", "registry \"example..com\" is not a valid host[:port]"},
        Invalid{"nvcr.io/" + std::string(250, 'a'), "the name is 258 characters long; the limit is 255"}));

TEST(Reference, ControlCharactersAreEscapedInMessages) {
  try {
    parse_image_reference("ubuntu\n:latest");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 ("invalid image reference \"ubuntu\\n:latest\": repository \"ubuntu\\n\"" + kRepositoryRule).c_str());
  }
}

TEST(Reference, DockerHubTalksToRegistryOneAndLooksUpTheLegacyCredentialsKey) {
  ImageReference hub = parse_image_reference("docker://index.docker.io/ubuntu");
  EXPECT_TRUE(hub.is_docker_hub());
  EXPECT_EQ(hub.api_host(), "registry-1.docker.io");
  auto keys = hub.credentials_keys();
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(keys[0], "https://index.docker.io/v1/");
  for (const char* key : {"index.docker.io", "docker.io", "registry-1.docker.io"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
}

TEST(Reference, OtherRegistriesUseTheirHostAndPort) {
  ImageReference ngc = parse_image_reference("docker://nvcr.io/nvidia/pytorch:22.03-py3");
  EXPECT_FALSE(ngc.is_docker_hub());
  EXPECT_EQ(ngc.api_host(), "nvcr.io");
  auto keys = ngc.credentials_keys();
  EXPECT_EQ(keys[0], "nvcr.io");
  EXPECT_NE(std::find(keys.begin(), keys.end(), "https://nvcr.io"), keys.end());
  ImageReference local = parse_image_reference("localhost:5000/busybox");
  EXPECT_EQ(local.api_host(), "localhost:5000");
  EXPECT_EQ(local.credentials_keys()[0], "localhost:5000");
}

}  // namespace
}  // namespace capsa::reference
