#pragma once
// Registry documents as registries send them (pretty-printed, as Docker Hub and
// distribution serve them), written from the image spec and Docker's manifest-v2-2 spec.
// Digests are sha256 of short labels ("layer-1", ...), so that they are well-formed.
#include <string_view>

namespace capsa::oci::samples {

inline constexpr std::string_view kDockerManifestList = R"({
   "schemaVersion": 2,
   "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
   "manifests": [
      {
         "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "size": 529,
         "digest": "sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e",
         "platform": {
            "architecture": "amd64",
            "os": "linux"
         }
      },
      {
         "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "size": 529,
         "digest": "sha256:7723f6b4e5efad04f14e8e7749babdcdbcf74e013592290391be772dd79523ae",
         "platform": {
            "architecture": "arm",
            "os": "linux",
            "variant": "v7"
         }
      },
      {
         "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "size": 529,
         "digest": "sha256:53a30f7e01e596325585b090d008d22af766f9eacde169838fe4fbfcef2033cc",
         "platform": {
            "architecture": "arm64",
            "os": "linux",
            "variant": "v8"
         }
      },
      {
         "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "size": 529,
         "digest": "sha256:a8ccbc63aa386c256b9056816a5d195c8beda8cf4982014943ef10b3dc2a6a62",
         "platform": {
            "architecture": "ppc64le",
            "os": "linux"
         }
      },
      {
         "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "size": 529,
         "digest": "sha256:92601eb2421593d1fd44456ada4806075d7866ecfdc08bc3159664dba0f5fa98",
         "platform": {
            "architecture": "s390x",
            "os": "linux"
         }
      }
   ]
})";

// What BuildKit pushes with provenance on (docker buildx build --push): one attestation
// manifest per image, platform unknown/unknown, pointing back at the image it describes.
inline constexpr std::string_view kOciIndexWithAttestations = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "digest": "sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e",
      "size": 1611,
      "platform": {"architecture": "amd64", "os": "linux"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "digest": "sha256:fa30a4448bf43e08976add9c5977940c874718b2b519827baa75d412e86886e3",
      "size": 1611,
      "platform": {"architecture": "arm64", "os": "linux"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "digest": "sha256:bb1741f2666f725682c529ac48ce23de78f676b12633770cfae6707c50575f5a",
      "size": 566,
      "annotations": {
        "vnd.docker.reference.digest": "sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e",
        "vnd.docker.reference.type": "attestation-manifest"
      },
      "platform": {"architecture": "unknown", "os": "unknown"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "digest": "sha256:7f7602d790a4d6547c14e586b298b347fcd262d9a0f26928d44a65dce51c2e49",
      "size": 566,
      "annotations": {
        "vnd.docker.reference.digest": "sha256:fa30a4448bf43e08976add9c5977940c874718b2b519827baa75d412e86886e3",
        "vnd.docker.reference.type": "attestation-manifest"
      },
      "platform": {"architecture": "unknown", "os": "unknown"}
    }
  ]
})";

inline constexpr std::string_view kOciManifest = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {
    "mediaType": "application/vnd.oci.image.config.v1+json",
    "digest": "sha256:15bb04d9cb3817ba57f751dc189c10dbd906b0587dcb4f252c95df1c4ba8c036",
    "size": 1470
  },
  "layers": [
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
      "digest": "sha256:922badbaf192e1a4a5af64df422de6d73e96e70d0ab52245bd3d692bcea9cfad",
      "size": 29534055
    },
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar+zstd",
      "digest": "sha256:6bdb18f83935f1d97220ee8035e6ccd7e764c32102587be4488f940f943ebda6",
      "size": 4067
    },
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar",
      "digest": "sha256:da0002e0cd62c639edf0b88ba0216b00084f5abf275328f44d39784450a625f4",
      "size": 0,
      "annotations": {"org.opencontainers.image.title": "empty.tar"}
    }
  ],
  "annotations": {
    "org.opencontainers.image.base.name": "docker.io/library/debian:bookworm-slim",
    "org.opencontainers.image.created": "2024-05-01T12:00:00Z"
  }
})";

// Docker schema 2 with a Windows-style foreign layer (urls, never pushed).
inline constexpr std::string_view kDockerManifest = R"({
   "schemaVersion": 2,
   "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
   "config": {
      "mediaType": "application/vnd.docker.container.image.v1+json",
      "size": 2316,
      "digest": "sha256:1abfa0bb372b4c6bedfe943ff8d5ad1b1ee5a004abeb05c1a3cda9cb134fee2f"
   },
   "layers": [
      {
         "mediaType": "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
         "size": 1675168,
         "digest": "sha256:656771905e1ef731f65cd0a0d9fb061238380a1a012e6abdf846ecc7d2ea36fd",
         "urls": ["https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:656771905e1ef731f65cd0a0d9fb061238380a1a012e6abdf846ecc7d2ea36fd"]
      },
      {
         "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
         "size": 32654,
         "digest": "sha256:922badbaf192e1a4a5af64df422de6d73e96e70d0ab52245bd3d692bcea9cfad"
      }
   ]
})";

// An index whose only entry is another index (image-spec: SHOULD be supported).
inline constexpr std::string_view kNestedIndex = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {
      "mediaType": "application/vnd.oci.image.index.v1+json",
      "digest": "sha256:ec229d91bf37c07f85fe126c65ca223eedfa090e2d7509579231bce9bab18ee7",
      "size": 1024,
      "annotations": {"org.opencontainers.image.ref.name": "latest"}
    }
  ]
})";

// A config as `docker build` writes it: nulls for unset fields, container_config, ...
inline constexpr std::string_view kDockerConfig = R"({"architecture":"arm64","variant":"v8","config":{"Hostname":"","Domainname":"","User":"1000:1000","AttachStdin":false,"AttachStdout":false,"AttachStderr":false,"ExposedPorts":{"8888/tcp":{}},"Tty":false,"OpenStdin":false,"StdinOnce":false,"Env":["PATH=/opt/conda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","LANG=C.UTF-8","CONDA_DIR=/opt/conda"],"Cmd":["start-notebook.py"],"Image":"sha256:4110680cae610c925bcd9327c54940da96147d3dd274bccd9960504bc51dd585","Volumes":{"/home/jovyan/work":{},"/data":{}},"WorkingDir":"/home/jovyan","Entrypoint":["tini","-g","--"],"OnBuild":null,"Labels":{"maintainer":"Jupyter Project <jupyter@googlegroups.com>","org.opencontainers.image.version":"2024-05-01"},"StopSignal":"SIGTERM"},"container_config":{"Cmd":["/bin/sh","-c","#(nop) ","CMD [\"start-notebook.py\"]"],"Labels":null},"created":"2024-05-01T12:34:56.789012345Z","docker_version":"24.0.7","author":"Jupyter Project","history":[{"created":"2024-04-30T01:02:03Z","created_by":"/bin/sh -c #(nop) ADD file:3a3b in / "},{"created":"2024-04-30T01:02:04Z","created_by":"/bin/sh -c #(nop)  CMD [\"bash\"]","empty_layer":true},{"created":"2024-05-01T12:34:56Z","created_by":"RUN /bin/bash -o pipefail -c apt-get update","comment":"buildkit.dockerfile.v0"}],"os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:33d457402f456235be5340c020ecac65013ac0bf8b6f397b46cb38b543092cc4","sha256:fd22cd952c375659ee285e61d2bcfba89fbb0c0a9933414addf0d75c354b1b6f"]}})";

}  // namespace capsa::oci::samples
