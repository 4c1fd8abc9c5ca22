//go:build valgrind

package main

// valgrindBuild is set in the build whose Go runtime reports its allocations to valgrind
// (-tags=valgrind, the C tests' valgrind run). That reporting is experimental in Go and
// misreports blocks a collection freed and reused ("block overlaps with block"), so this
// build leaves the collector as it is: no memory limit, no collection forced at destroy.
const valgrindBuild = true
