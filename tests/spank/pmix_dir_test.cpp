// Finding the step's PMIx server directory in slurmstepd's memory map (spank/pmix_dir.hpp).
#include "spank/pmix_dir.hpp"

#include <gtest/gtest.h>

namespace capsa::spank {
namespace {

const char* const maps =
    "55d0c0a00000-55d0c0a2a000 r--p 00000000 08:01 1234   /usr/sbin/slurmstepd\n"
    "7f0000000000-7f0000001000 rw-s 00000000 08:01 99     "
    "/var/spool/slurmd/n1/pmix.17.3/pmix_dstor_ds21_4711/initial-pmix_shared-segment-0\n"
    "7f0000002000-7f0000003000 rw-s 00000000 08:01 98     /var/spool/slurmd/n1/pmix.17.30/x\n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n";

TEST(PmixDir, TheStepsDirectoryIsFoundInTheMap) {
  EXPECT_EQ(pmix_dir_in_maps(maps, "17", "3"), "/var/spool/slurmd/n1/pmix.17.3");
  EXPECT_EQ(pmix_dir_in_maps(maps, "17", "30"), "/var/spool/slurmd/n1/pmix.17.30");
}

TEST(PmixDir, AnotherStepOrNoPmixGivesNothing) {
  EXPECT_EQ(pmix_dir_in_maps(maps, "17", "4"), "");
  EXPECT_EQ(pmix_dir_in_maps(maps, "1", "3"), "");
  EXPECT_EQ(pmix_dir_in_maps("", "17", "3"), "");
  EXPECT_EQ(pmix_server_dir("17", "3"), "") << "this test process maps no PMIx datastore";
}

}  // namespace
}  // namespace capsa::spank
