#!/usr/bin/env bash
# test-all.sh [-short]: every module's tests in one `go test` run, so that packages of every
# module share the two cores (most of them wait on brokers, ZooKeeper and JVMs rather than
# compute), then the allocation tests without the race detector. The report
# (scripts/testreport.go) prints each package as it ends, every failure whole, and at the end
# the slowest tests, each package's time and "N passed, N failed, N skipped"; the raw
# go test -json stream is kept in bin/test-unit.json.
#
# -short: a developer's inner loop (go test -short, no race detector): the tests that start
# processes, clusters or JVMs skip themselves, the rest run.
#
# TEST_P sets how many test binaries run at once (default 2) and TEST_PARALLEL how many
# parallel tests each runs at once (default 3; the packages' own bounds apply within it): about
# six tests at a time, most of them waiting on brokers and JVMs. More than that starves the
# brokers of CPU on two cores (failure detectors take them for dead, ZooKeeper sessions time
# out), and the cluster tests fail for it.; TEST_RUN passes -run to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
modules=(protocol-spec broker sdk-go sdk-cgo conformance examples)
mkdir -p bin

# The longest packages go first, longest first: go test starts the test binaries in the order
# of the package list as their builds finish, and the run ends when the last long one does.
patterns=()
for m in "${modules[@]}"; do patterns+=("./$m/..."); done
mapfile -t pkgs < <($GO list "${patterns[@]}")
long=(broker/internal/server sdk-cgo sdk-go/cmd/spool conformance/cmd/spool-conformance conformance broker/cmd/spoold sdk-go)
first=() rest=()
for l in "${long[@]}"; do
  for p in "${pkgs[@]}"; do [ "$p" = "github.com/spoolmq/spool/$l" ] && first+=("$p"); done
done
for p in "${pkgs[@]}"; do [[ " ${first[*]} " == *" $p "* ]] || rest+=("$p"); done

report() { $GO run scripts/testreport.go -raw "$1"; }

run=()
[ -n "${TEST_RUN:-}" ] && run=(-run "$TEST_RUN")
if [ "${1:-}" = -short ]; then
  echo "[test] go test -short (no race detector)"
  $GO test -short -count=1 -timeout 10m -json -p "${TEST_P:-2}" -parallel "${TEST_PARALLEL:-3}" "${run[@]}" "${first[@]}" "${rest[@]}" 2>&1 | report bin/test-short.json
  exit
fi

echo "[test] go test -race, every module"
$GO test -race -count=1 -timeout 30m -json -p "${TEST_P:-2}" -parallel "${TEST_PARALLEL:-3}" "${run[@]}" "${first[@]}" "${rest[@]}" 2>&1 | report bin/test-unit.json

# Allocation counts are only meaningful without the race detector (it makes sync.Pool drop
# items), so the allocation tests, skipped above, run again here without it: only in the
# packages that have them, so nothing else is built a second time.
mapfile -t alloc < <(grep -rl --include='*_test.go' -E '^func Test[A-Za-z0-9_]*Alloc' "${modules[@]}" | xargs -r -n1 dirname | sort -u | sed 's|^|./|')
if [ ${#alloc[@]} -gt 0 ]; then
  echo "[test] allocation tests without -race: ${alloc[*]}"
  $GO test -count=1 -run 'Alloc' "${alloc[@]}"
fi

# The benchmark harness is a module of its own outside the workspace (GOWORK=off).
echo "[test] bench harness"
(cd bench && GOWORK=off $GO test -count=1 -race .)
