#pragma once
// Timestamps of the phases of a container start, for bench/start.sh's breakdown of where
// a start's time goes. Off unless CAPSA_PHASE_FD names a descriptor open for writing:
// each mark then writes "NAME NANOSECONDS\n" (CLOCK_MONOTONIC) to it with one write(2),
// and the benchmark's harness (bench/phases.c) puts the marks beside its own clock
// readings before the exec of capsa and after the container's exit. The descriptor is
// made close-on-exec at the first mark: the container never inherits it.
namespace capsa::phases {

// `name`: a short word without spaces ("namespaces", "image-mounted", ...).
void mark(const char* name);

}  // namespace capsa::phases
