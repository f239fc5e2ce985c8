/* File-read throughput, run inside a container by bench/read.sh (built static, so that
 * it runs in any image). Not a test.
 *   readtree tree DIR THREADS   reads every regular file below DIR, THREADS at a time
 *   readtree file PATH          reads one file from start to end
 * Prints "BYTES FILES SECONDS" (the time of the reads alone, not of the walk). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static size_t count, capacity;
static atomic_size_t next_path;
static atomic_ullong total_bytes;

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
  if (count == capacity) {
    capacity = capacity ? capacity * 2 : 4096;
    paths = realloc(paths, capacity * sizeof *paths);
    if (!paths) { perror("realloc"); exit(1); }
  }
  paths[count++] = strdup(path);
  return 0;
}

static unsigned long long read_all(const char *path) {
  static __thread char buffer[1 << 20];
  int fd = open(path, O_RDONLY);
  if (fd < 0) { perror(path); exit(1); }
  unsigned long long bytes = 0;
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0) { perror(path); exit(1); }
    if (n == 0) break;
    bytes += (unsigned long long)n;
  }
  close(fd);
  return bytes;
}

static void *worker(void *unused) {
  (void)unused;
  for (;;) {
    size_t i = atomic_fetch_add(&next_path, 1);
    if (i >= count) return NULL;
    atomic_fetch_add(&total_bytes, read_all(paths[i]));
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "tree") == 0) {
    int threads = atoi(argv[3]);
    if (threads < 1 || threads > 1024) { fprintf(stderr, "bad THREADS\n"); return 2; }
    if (nftw(argv[2], collect, 64, FTW_PHYS) != 0) { perror(argv[2]); return 1; }
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    double start = now();
    for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, worker, NULL);
    for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
    printf("%llu %zu %.6f\n", (unsigned long long)total_bytes, count, now() - start);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "file") == 0) {
    double start = now();
    unsigned long long bytes = read_all(argv[2]);
    printf("%llu 1 %.6f\n", bytes, now() - start);
    return 0;
  }
  fprintf(stderr, "usage: readtree tree DIR THREADS | readtree file PATH\n");
  return 2;
}
