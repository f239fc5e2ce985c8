// Where a container start's time goes: runs COMMAND RUNS times, each with a pipe on
// descriptor 3 and CAPSA_PHASE_FD=3, and reads the phase marks capsa writes there
// (src/util/start_phases.hpp: "NAME NANOSECONDS", CLOCK_MONOTONIC). Beside them it takes
// its own readings on the same clock: just before the fork that execs COMMAND, and when
// waitpid returns. Prints, per phase, the median time from the previous mark over the runs
// ("fork+exec" is the harness's fork to capsa's main; "command+exit" is the exec of the
// container's command to the harness seeing it exit, namespace teardown included).
// A C program rather than a script: a shell's own fork and clock reading cost more than
// the phases it would measure.
//   phases RUNS COMMAND [ARG...]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxPhases = 32, kMaxRuns = 10000 };

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static char names[kMaxPhases][64];
static int phase_count;
static double *samples[kMaxPhases];  // samples[phase][run]: ms since the previous mark

static int phase_index(const char *name) {
  for (int i = 0; i < phase_count; i++)
    if (strcmp(names[i], name) == 0) return i;
  if (phase_count == kMaxPhases) return -1;
  snprintf(names[phase_count], sizeof names[0], "%s", name);
  samples[phase_count] = calloc(kMaxRuns, sizeof(double));
  return phase_count++;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double mean(const double *values, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++) sum += values[i];
  return sum / n;
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof *values, compare);
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// One run: returns 0 and records its phases, or -1 when the command failed.
static int run_once(char **command, int run) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  long long start = now_ns();
  pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 3);  // dup2 clears close-on-exec
    setenv("CAPSA_PHASE_FD", "3", 1);
    execvp(command[0], command);
    _exit(127);
  }
  close(pipe_fds[1]);
  int status = 0;
  waitpid(child, &status, 0);
  long long end = now_ns();
  // Marks written before the command's exec are in the pipe; a FUSE server that still
  // holds the write end must not keep the harness waiting for EOF.
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  char text[8192];
  ssize_t length = 0, n;
  while (length < (ssize_t)sizeof text - 1 && (n = read(pipe_fds[0], text + length, sizeof text - 1 - (size_t)length)) > 0)
    length += n;
  close(pipe_fds[0]);
  text[length] = '\0';
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  // Each phase is named by the marks around it: "start>main" is the fork, the exec and
  // the loader up to capsa's main(); "exec>exit" the container's command and its exit.
  long long previous = start;
  char previous_name[32] = "start";
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char name[32], label[64];
    long long at;
    if (sscanf(line, "%31s %lld", name, &at) != 2) continue;
    snprintf(label, sizeof label, "%s>%s", previous_name, name);
    int i = phase_index(label);
    if (i >= 0) samples[i][run] = (double)(at - previous) / 1e6;
    previous = at;
    snprintf(previous_name, sizeof previous_name, "%s", name);
  }
  char label[64];
  snprintf(label, sizeof label, "%s>exit", previous_name);
  int i = phase_index(label);
  if (i >= 0) samples[i][run] = (double)(end - previous) / 1e6;
  i = phase_index("total");
  if (i >= 0) samples[i][run] = (double)(end - start) / 1e6;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: phases RUNS COMMAND [ARG...]\n");
    return 2;
  }
  int runs = atoi(argv[1]);
  if (runs < 1 || runs > kMaxRuns) {
    fprintf(stderr, "phases: RUNS must be 1 to %d\n", kMaxRuns);
    return 2;
  }
  for (int run = 0; run < runs; run++)
    if (run_once(argv + 2, run) != 0) {
      fprintf(stderr, "phases: %s failed (run %d)\n", argv[2], run + 1);
      return 1;
    }
  printf("%-40s %9s %9s\n", "phase (from mark > to mark)", "median ms", "mean ms");
  for (int i = 0; i < phase_count; i++) {
    double average = mean(samples[i], runs);
    printf("%-40s %9.3f %9.3f\n", names[i], median(samples[i], runs), average);
  }
  return 0;
}
