//go:build !valgrind

package main

// valgrindBuild: see gc_valgrind.go.
const valgrindBuild = false
