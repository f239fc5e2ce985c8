/* Prints the real and effective user ids of the process running it. Built static, so it
 * runs in any image; the privilege tests make a setuid-root copy of it and check that,
 * run by the unprivileged user through capsa, it never becomes root. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("ruid=%u euid=%u\n", (unsigned)getuid(), (unsigned)geteuid());
  return 0;
}
