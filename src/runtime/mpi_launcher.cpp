#include "runtime/mpi_launcher.hpp"

#include <filesystem>

namespace capsa::runtime {
namespace {

constexpr const char* kDocs = "see docs/mpi-and-slurm.md, \"When ranks do not find each other\"";

bool has(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it != env.end() && !it->second.empty();
}

// "libmpi.so.40" has stem "libmpi": the part before ".so".
std::string stem(const std::string& soname) { return soname.substr(0, soname.find(".so")); }

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Launcher detect_launcher(const EnvMap& env) {
  Launcher l;
  l.pmix = has(env, "PMIX_NAMESPACE") && has(env, "PMIX_RANK");
  l.pmi2 = has(env, "PMI_FD");
  l.open_mpi = has(env, "OMPI_COMM_WORLD_SIZE");
  const bool slurm_step = has(env, "SLURM_STEP_ID") || has(env, "SLURM_STEPID");
  if (l.open_mpi) l.name = "Open MPI's mpirun";
  else if (slurm_step && l.pmix) l.name = "srun --mpi=pmix";
  else if (slurm_step && l.pmi2) l.name = "srun --mpi=pmi2";
  else if (l.pmix) l.name = "a PMIx launcher";
  else if (l.pmi2) l.name = "a PMI-2 launcher (srun --mpi=pmi2 or MPICH's mpiexec)";
  return l;
}

std::vector<MountStep> launcher_mounts(const Launcher& launcher, const EnvMap& env) {
  if (!launcher.pmix) return {};
  auto it = env.find("PMIX_SERVER_TMPDIR");
  if (it == env.end() || it->second.empty() || it->second[0] != '/') return {};
  std::string dir = std::filesystem::path(it->second).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir == "/") return {};
  MountStep step;
  step.source = step.target = dir;
  step.required = false;
  return {step};
}

ImageMpi image_mpi_from_sonames(const std::vector<std::string>& sonames) {
  // libmpi.so.N is Open MPI's only next to Open MPI's portability layer (libopen-pal);
  // MPICH-family MPIs (MPICH, Intel MPI, MVAPICH) ship a libmpi.so.12 of their own ABI.
  bool open_pal = false;
  std::vector<std::string> libmpi;
  ImageMpi image;
  for (const std::string& soname : sonames) {
    const std::string s = stem(soname);
    if (s == "libopen-pal") open_pal = true;
    else if (s == "libmpi") libmpi.push_back(soname);
    else if (s == "libmpich") image.mpich.push_back(soname);
    else if (s == "libpmix") image.pmix.push_back(soname);
    else if (s == "libpmi2" || s == "libpmi") image.pmi.push_back(soname);
  }
  auto& family = open_pal ? image.open_mpi : image.mpich;
  family.insert(family.end(), libmpi.begin(), libmpi.end());
  return image;
}

std::optional<std::string> pmi_mismatch(const Launcher& launcher, const ImageMpi& image) {
  if (!launcher.any() || !image.any_mpi()) return std::nullopt;
  // Open MPI's own launcher starts Open MPI ranks only: its orted is the PMIx server and
  // its ranks' MPI must be Open MPI (of the same major version, which capsa cannot tell).
  if (launcher.open_mpi && image.open_mpi.empty())
    return "this rank was started by " + launcher.name + ", but the image's MPI is MPICH-family (" +
           joined(image.mpich) + ") and no Open MPI (libmpi.so): the ranks of an MPI program will not find each other. Launch it "
           "with the image's MPI family (an MPICH mpiexec or srun), or use an image with Open MPI (" + kDocs + ")";
  // PMI-2 only: Open MPI reaches a PMI-2 server only through Slurm's libpmi2 (its s2
  // component); without one it knows PMIx alone and aborts in MPI_Init.
  if (launcher.pmi2 && !launcher.pmix && !image.open_mpi.empty() && image.pmi.empty())
    return "this rank was started by " + launcher.name + ", which offers PMI-2 only, but the image's Open MPI (" +
           joined(image.open_mpi) + ") has no PMI-2 library (libpmi2.so) and speaks PMIx" +
           (image.pmix.empty() ? "" : " (" + joined(image.pmix) + ")") +
           ": an MPI program of this image will fail in MPI_Init. Use srun --mpi=pmix, or an image whose Open MPI was built --with-pmi (" + kDocs + ")";
  // PMIx only: an MPICH built without PMIx (Debian's, most distributions') knows the
  // PMI-1/PMI-2 wire protocol only, finds no PMI_FD, and starts as a singleton.
  if (launcher.pmix && !launcher.pmi2 && image.open_mpi.empty() && !image.mpich.empty() && image.pmix.empty())
    return "this rank was started by " + launcher.name + ", which offers PMIx only, but the image's MPI (" +
           joined(image.mpich) + ") has no PMIx library (libpmix.so): each rank of an MPI program will run alone as \"rank 0 of 1\". "
           "Use srun --mpi=pmi2, or an image whose MPI was built with PMIx (" + kDocs + ")";
  return std::nullopt;
}

std::optional<std::string> cleanenv_drops_launcher(const Launcher& launcher, bool clean) {
  if (!clean || !launcher.any()) return std::nullopt;
  return "--cleanenv/--containall drop the PMIX_*/PMI_* variables " + launcher.name +
         " passes to its ranks: an MPI program will not find its peers. Pass them with --env, or do not clean "
         "the environment (" + kDocs + ")";
}

}  // namespace capsa::runtime
