#!/usr/bin/env python3
"""Imports packaging/spack/packages/capsa/package.py against a stub of the Spack API it
uses (spack.package: CMakePackage and the directives), as Spack would, and checks what it
declares: each library cmake/CapsaDependencies.cmake finds has a depends_on (or a comment
saying why not), and cmake_args() turns the tests off. Spack itself is not packaged in
Debian; the stub records the directives instead of resolving them.
    check_spack_package.py SOURCE_DIR"""
import importlib.util
import re
import sys
import types

source = sys.argv[1]
pending = []


def directive(name):
    def record(*args, **kwargs):
        pending.append((name, args, kwargs))
    return record


class CMakePackage:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.directives = list(pending)
        pending.clear()

    def __init__(self, variants):
        self.variants = variants

    def define(self, name, value):
        text = ("ON" if value else "OFF") if isinstance(value, bool) else str(value)
        return f"-D{name}={text}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.variants[variant])


stub = types.ModuleType("spack.package")
stub.CMakePackage = CMakePackage
for name in ("version", "variant", "depends_on", "conflicts", "maintainers", "license", "patch", "provides"):
    setattr(stub, name, directive(name))
stub.__all__ = [name for name in vars(stub) if not name.startswith("_")]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub

spec = importlib.util.spec_from_file_location("capsa_spack_package", f"{source}/packaging/spack/packages/capsa/package.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

failures = []
package = getattr(module, "Capsa", None)
if package is None or not issubclass(package, CMakePackage):
    sys.exit("check_spack_package: package.py defines no Capsa(CMakePackage)")
if not package.__doc__ or not getattr(package, "git", None):
    failures.append("Capsa needs a docstring (its description) and a git URL")
declared = {args[0].split("@")[0] for name, args, _ in package.directives if name == "depends_on"}
if not any(name == "version" for name, _, _ in package.directives):
    failures.append("no version() declared")

# What the CMake build looks for, by the name Spack gives it.
spack_name = {"OpenSSL": "openssl", "nlohmann_json": "nlohmann-json", "yaml-cpp": "yaml-cpp", "CLI11": "cli11",
              "LibArchive": "libarchive", "CURL": "curl", "libseccomp": "libseccomp", "libcap": "libcap",
              "gpgme": "gpgme", "fuse3": "libfuse", "PkgConfig": "pkgconfig", "libzstd": "zstd",
              "libdeflate": "libdeflate", "e2p": "e2fsprogs", "liburing": "liburing"}
cmake_text = ""
for path in ("cmake/CapsaDependencies.cmake", "src/signing/CMakeLists.txt", "src/squashfs/CMakeLists.txt",
             "src/ext3/CMakeLists.txt"):
    with open(f"{source}/{path}") as handle:
        cmake_text += handle.read()
found = set(re.findall(r"find_package\((\w[\w-]*)", cmake_text))
modules = re.findall(r"pkg_(?:check_modules|search_module)\(\w+ REQUIRED (?:IMPORTED_TARGET )?([\w\s-]+?)\)", cmake_text)
found |= {module.split()[-1] for module in modules}  # of alternatives, the upstream name
with open(f"{source}/packaging/spack/packages/capsa/package.py") as handle:
    package_text = handle.read()
for name in sorted(found - {"Threads", "Git", "GTest"}):
    if name in ("libsquashfs1", "libsquashfs"):
        if "libsquashfs" not in package_text:
            failures.append("libsquashfs: neither depends_on nor a comment on where it comes from")
        continue
    wanted = spack_name.get(name)
    if wanted is None:
        failures.append(f"{name}: the build needs it, check_spack_package.py does not know its Spack name")
    elif wanted not in declared:
        failures.append(f"{name}: the build needs it, package.py has no depends_on('{wanted}')")

args = package({"static_runner": False}).cmake_args()
if "-DCAPSA_BUILD_TESTS=OFF" not in args or "-DCAPSA_STATIC_RUNNER=OFF" not in args:
    failures.append(f"cmake_args() = {args}: tests and the static runner must be off")

if failures:
    print("check_spack_package: " + "\n  ".join(["packaging/spack/packages/capsa/package.py:"] + failures), file=sys.stderr)
    sys.exit(1)
print(f"package.py declares {len(declared)} dependencies; cmake_args: {' '.join(args)}")
