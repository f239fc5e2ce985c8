/* mpi_app: the MPI program of the MPI/Slurm tests and of bench/mpi.sh.
 *
 *   mpi_app [--size N] [--require-env NAME,...] [--fail-rank R:CODE] [--quiet]
 *
 * Every rank checks that
 *   - the world has N ranks (--size; default: whatever the launcher says it started,
 *     from OMPI_COMM_WORLD_SIZE, PMIX_SIZE... see launcher_size),
 *   - its MPI rank is the one the launcher gave it (OMPI_COMM_WORLD_RANK, PMIX_RANK,
 *     SLURM_PROCID, PMI_RANK): "rank 0 of 1" in every process is the classic symptom of
 *     an MPI that did not reach the launcher's process-management interface,
 *   - MPI_Allreduce(sum of rank + 1) is N(N+1)/2 and MPI_Allgather of the ranks gives
 *     every rank exactly once,
 *   - each variable named by --require-env is set (in the container, when run by capsa).
 * It prints one line per rank, "mpi_app: rank R of N on HOST: ok", and exits 0; on any
 * mismatch it prints what differed and exits 3. --fail-rank R:CODE makes rank R exit with
 * CODE after a clean MPI_Finalize (how a job must report a failing rank). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *first_env(const char *const *names) {
  for (; *names; ++names) {
    const char *value = getenv(*names);
    if (value && *value) return value;
  }
  return NULL;
}

/* What the launcher says about this process, or -1 when no launcher variable is set. */
static long launcher_value(const char *const *names) {
  const char *value = first_env(names);
  return value ? strtol(value, NULL, 10) : -1;
}

int main(int argc, char **argv) {
  long expected_size = -1, fail_rank = -1, fail_code = 0;
  const char *required = NULL;
  int quiet = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      expected_size = strtol(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--require-env") == 0 && i + 1 < argc) {
      required = argv[++i];
    } else if (strcmp(argv[i], "--fail-rank") == 0 && i + 1 < argc) {
      char *colon = NULL;
      fail_rank = strtol(argv[++i], &colon, 10);
      fail_code = (colon && *colon == ':') ? strtol(colon + 1, NULL, 10) : 1;
    } else if (strcmp(argv[i], "--quiet") == 0) {
      quiet = 1;
    } else {
      fprintf(stderr, "mpi_app: unknown argument %s\n", argv[i]);
      return 2;
    }
  }

  MPI_Init(&argc, &argv);
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = "?";
  gethostname(host, sizeof host);
  int bad = 0;

  static const char *const rank_names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK", NULL};
  static const char *const size_names[] = {"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", NULL};
  long launcher_rank = launcher_value(rank_names);
  long launcher_size = launcher_value(size_names);
  if (expected_size < 0) expected_size = launcher_size;
  if (expected_size >= 0 && size != expected_size) {
    fprintf(stderr, "mpi_app: rank %d: world size is %d, expected %ld\n", rank, size, expected_size);
    bad = 1;
  }
  if (launcher_rank >= 0 && rank != launcher_rank) {
    fprintf(stderr, "mpi_app: MPI rank %d, but the launcher started this process as rank %ld\n", rank, launcher_rank);
    bad = 1;
  }

  if (required) {
    char *names = strdup(required);
    for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
      if (!getenv(name)) {
        fprintf(stderr, "mpi_app: rank %d: %s is not set\n", rank, name);
        bad = 1;
      }
    }
    free(names);
  }

  long mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size + 1) / 2) {
    fprintf(stderr, "mpi_app: rank %d: allreduce gave %ld, expected %ld\n", rank, sum, (long)size * (size + 1) / 2);
    bad = 1;
  }
  int *ranks = calloc((size_t)size, sizeof *ranks);
  int *seen = calloc((size_t)size, sizeof *seen);
  MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < size; ++i) {
    if (ranks[i] < 0 || ranks[i] >= size || seen[ranks[i]]++) {
      fprintf(stderr, "mpi_app: rank %d: allgather slot %d holds rank %d twice or out of range\n", rank, i, ranks[i]);
      bad = 1;
    }
  }
  free(ranks);
  free(seen);

  if (!quiet) printf("mpi_app: rank %d of %d on %s: %s\n", rank, size, host, bad ? "MISMATCH" : "ok");
  fflush(stdout);
  MPI_Finalize();
  if (bad) return 3;
  if (rank == fail_rank) {
    fprintf(stderr, "mpi_app: rank %d exits with %ld as asked\n", rank, fail_code);
    return (int)fail_code;
  }
  return 0;
}
