#!/usr/bin/env bash
# each-module.sh MODULE ACTION: run one build/test action in one module of the workspace.
# A module without Go packages yet has nothing to do (go would fail on "./..." matching nothing).
set -euo pipefail
mod=$1 action=$2
cd "$(dirname "$0")/../$mod"
GO=${GO:-go}
# A module whose packages do not load (say, a go.mod that needs tidying under GOWORK=off)
# fails here with go's message, rather than passing as one with nothing to do.
errs=$(mktemp)
if ! pkgs=$($GO list ./... 2>"$errs"); then
  echo "[$mod] go list ./... failed:" >&2
  cat "$errs" >&2
  rm -f "$errs"
  exit 1
fi
rm -f "$errs"
if [ -z "$pkgs" ]; then
  echo "[$mod] no packages yet, nothing to $action"
  exit 0
fi
case $action in
  build) $GO build ./... ;;
  vet) $GO vet ./... ;;
  test)
    echo "[$mod] go test -race"
    # The timeout guards against a hung test, not a slow one: the broker's server package
    # runs 9 minutes alone and over 15 beside the other modules on a loaded 2-core machine.
    $GO test -race -count=1 -timeout 30m ./...
    # Allocation counts are only meaningful without the race detector (it makes sync.Pool drop
    # items), so the allocation tests, skipped above, run again here without it.
    echo "[$mod] allocation tests without -race"
    out=$($GO test -count=1 -run 'Alloc' ./... 2>&1) || { echo "$out"; exit 1; } ;;
  fuzz)
    for pkg in $pkgs; do
      for target in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
        echo "[$mod] fuzz $pkg $target for ${FUZZTIME:-3s}"
        log=$(mktemp)
        for attempt in 1 2; do
          if $GO test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-3s}" -fuzzminimizetime 1s >"$log" 2>&1; then
            break
          fi
          # The Go fuzzer sometimes fails with "context deadline exceeded" when the time budget
          # ends while a worker is busy, without any failing input. That is the toolchain, not
          # our code: run the target once more. A real failure writes its input and fails again.
          if [ "$attempt" = 1 ] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written" "$log"; then
            echo "[$mod] $target: fuzzer deadline hiccup, running it again"
            continue
          fi
          cat "$log"; rm -f "$log"; exit 1
        done
        rm -f "$log"
      done
    done ;;
  bench) $GO test -run '^$' -bench . -benchtime "${BENCHTIME:-1s}" ./... ;;
  *) echo "each-module.sh: unknown action $action" >&2; exit 2 ;;
esac
