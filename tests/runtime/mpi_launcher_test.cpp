// The PMIx directory bind and the PMI mismatch rules (runtime/mpi_launcher.hpp) on the environments Debian's Slurm 22.05
// and Open MPI 4.1 really set (recorded from `srun env` and `mpirun env` on a test
// cluster) and on library lists of real images. The end-to-end case, a real srun
// --mpi=pmi2 of an Open MPI image, is in tests/mpi.
#include <gtest/gtest.h>

#include "runtime/mpi_launcher.hpp"

namespace capsa::runtime {
namespace {

EnvMap srun_pmix() {
  return {{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_MPI_TYPE", "pmix"},
          {"PMIX_NAMESPACE", "slurm.pmix.6.0"}, {"PMIX_RANK", "1"},
          {"PMIX_SERVER_URI41", "pmix-server.18493;tcp4://127.0.0.1:51163"},
          {"PMIX_SERVER_TMPDIR", "/var/spool/slurmd/pmix.6.0/"}};
}
EnvMap srun_pmi2() {
  return {{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_MPI_TYPE", "pmi2"},
          {"PMI_FD", "11"}, {"PMI_JOBID", "5.0"}, {"PMI_RANK", "0"}, {"PMI_SIZE", "2"}};
}
EnvMap mpirun() {
  return {{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"PMIX_NAMESPACE", "2380398593"},
          {"PMIX_RANK", "2"}, {"PMIX_SERVER_URI4", "prterun-vm-1@0.0;tcp4://127.0.0.1:40001"}};
}

// Debian bookworm's libopenmpi3 and what its MPICH package installs.
const std::vector<std::string> kDebianOpenMpi = {"libc.so.6", "libmpi.so.40", "libopen-pal.so.40", "libpmix.so.2",
                                                 "libhwloc.so.15"};
const std::vector<std::string> kDebianMpich = {"libc.so.6", "libmpich.so.12", "libmpi.so.12"};

TEST(MpiLauncher, LaunchersAreRecognisedFromTheirVariables) {
  Launcher pmix = detect_launcher(srun_pmix());
  EXPECT_TRUE(pmix.pmix);
  EXPECT_FALSE(pmix.pmi2);
  EXPECT_EQ(pmix.name, "srun --mpi=pmix");
  Launcher pmi2 = detect_launcher(srun_pmi2());
  EXPECT_TRUE(pmi2.pmi2);
  EXPECT_EQ(pmi2.name, "srun --mpi=pmi2");
  Launcher ompi = detect_launcher(mpirun());
  EXPECT_TRUE(ompi.open_mpi && ompi.pmix);
  EXPECT_EQ(ompi.name, "Open MPI's mpirun");
  EXPECT_FALSE(detect_launcher({{"SLURM_JOB_ID", "3"}, {"PATH", "/bin"}}).any()) << "a batch script is no launcher";
}

TEST(MpiLauncher, ThePmixServersDirectoryIsBoundWhereItIs) {
  auto mounts = launcher_mounts(detect_launcher(srun_pmix()), srun_pmix());
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].kind, MountStep::Kind::Bind);
  EXPECT_EQ(mounts[0].source, "/var/spool/slurmd/pmix.6.0");
  EXPECT_EQ(mounts[0].target, "/var/spool/slurmd/pmix.6.0");
  EXPECT_FALSE(mounts[0].required) << "a launcher's directory that is gone is no error";
  EXPECT_FALSE(mounts[0].read_only) << "the clients lock the datastore";
  EXPECT_TRUE(launcher_mounts(detect_launcher(srun_pmi2()), srun_pmi2()).empty());
  EnvMap relative = srun_pmix();
  relative["PMIX_SERVER_TMPDIR"] = "spool/pmix";
  EXPECT_TRUE(launcher_mounts(detect_launcher(relative), relative).empty());
  EnvMap root = srun_pmix();
  root["PMIX_SERVER_TMPDIR"] = "//";
  EXPECT_TRUE(launcher_mounts(detect_launcher(root), root).empty()) << "never the host's root";
  EnvMap plain = srun_pmix();
  plain.erase("PMIX_NAMESPACE");
  EXPECT_TRUE(launcher_mounts(detect_launcher(plain), plain).empty()) << "only under a PMIx launcher";
}

TEST(MpiLauncher, MatchingPairsAndNonMpiImagesAreSilent) {
  ImageMpi ompi = image_mpi_from_sonames(kDebianOpenMpi);
  EXPECT_EQ(ompi.open_mpi, std::vector<std::string>{"libmpi.so.40"});
  EXPECT_EQ(ompi.pmix, std::vector<std::string>{"libpmix.so.2"});
  EXPECT_TRUE(ompi.mpich.empty());
  ImageMpi mpich = image_mpi_from_sonames(kDebianMpich);
  EXPECT_TRUE(mpich.open_mpi.empty()) << "MPICH's libmpi.so.12 is not Open MPI";
  EXPECT_EQ(mpich.mpich, (std::vector<std::string>{"libmpich.so.12", "libmpi.so.12"}));
  EXPECT_FALSE(pmi_mismatch(detect_launcher(srun_pmix()), ompi));
  EXPECT_FALSE(pmi_mismatch(detect_launcher(mpirun()), ompi));
  EXPECT_FALSE(pmi_mismatch(detect_launcher(srun_pmi2()), image_mpi_from_sonames(kDebianMpich)));
  // `srun capsa exec image.sif hostname` with no MPI in the image: nothing to say.
  ImageMpi none = image_mpi_from_sonames({"libc.so.6", "libz.so.1"});
  EXPECT_FALSE(pmi_mismatch(detect_launcher(srun_pmix()), none));
  EXPECT_FALSE(pmi_mismatch(detect_launcher(srun_pmi2()), none));
  // Not under a launcher at all.
  EXPECT_FALSE(pmi_mismatch(detect_launcher({}), ompi));
  // Open MPI with Slurm's PMI-2 client may run under srun --mpi=pmi2.
  auto with_pmi2 = kDebianOpenMpi;
  with_pmi2.push_back("libpmi2.so.0");
  EXPECT_FALSE(pmi_mismatch(detect_launcher(srun_pmi2()), image_mpi_from_sonames(with_pmi2)));
}

TEST(MpiLauncher, OpenMpiUnderAPmi2OnlyLauncherIsNamedWithTheFix) {
  auto warning = pmi_mismatch(detect_launcher(srun_pmi2()), image_mpi_from_sonames(kDebianOpenMpi));
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("srun --mpi=pmi2"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("libmpi.so.40"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("srun --mpi=pmix"), std::string::npos) << "says what to do: " << *warning;
  EXPECT_NE(warning->find("docs/mpi-and-slurm.md"), std::string::npos) << *warning;
}

TEST(MpiLauncher, MpichWithoutPmixUnderAPmixLauncherIsNamed) {
  auto warning = pmi_mismatch(detect_launcher(srun_pmix()), image_mpi_from_sonames(kDebianMpich));
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("rank 0 of 1"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("libmpich.so.12"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("docs/mpi-and-slurm.md"), std::string::npos) << *warning;
}

TEST(MpiLauncher, MpichUnderOpenMpisMpirunIsNamed) {
  auto warning = pmi_mismatch(detect_launcher(mpirun()), image_mpi_from_sonames(kDebianMpich));
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("Open MPI's mpirun"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("MPICH"), std::string::npos) << *warning;
}

TEST(MpiLauncher, CleanenvUnderALauncherWarns) {
  EXPECT_TRUE(cleanenv_drops_launcher(detect_launcher(srun_pmix()), true));
  EXPECT_FALSE(cleanenv_drops_launcher(detect_launcher(srun_pmix()), false));
  EXPECT_FALSE(cleanenv_drops_launcher(detect_launcher({}), true));
}

}  // namespace
}  // namespace capsa::runtime
