#include "mpi_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <regex>

namespace capsa::mpi {

std::string mpi_sif() {
  const char* sif = std::getenv("CAPSA_TEST_MPI_SIF");
  return sif ? sif : "/nonexistent/mpi.sif";
}

std::vector<std::string> mpi_environment() {
  std::vector<std::string> env;
  if (::geteuid() == 0) {
    env.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
    env.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  } else {
    env.push_back("OMPI_MCA_btl_vader_single_copy_mechanism=none");
  }
  return env;
}

std::map<int, std::string> ok_ranks(const std::string& out, int size) {
  std::map<int, std::string> ranks;
  std::regex line("mpi_app: rank ([0-9]+) of ([0-9]+) on ([^:]+): ok");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    if (std::stoi((*it)[2]) != size) continue;
    ranks.emplace(std::stoi((*it)[1]), (*it)[3]);
  }
  return ranks;
}

std::set<std::string> hosts_of(const std::map<int, std::string>& ranks) {
  std::set<std::string> hosts;
  for (const auto& [rank, host] : ranks) hosts.insert(host);
  return hosts;
}

}  // namespace capsa::mpi
