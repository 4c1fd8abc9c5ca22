# Spool: one Makefile for the monorepo. `make run` starts a broker, `make test` runs every test.
SHELL := /bin/bash
GO ?= go
MODULES := protocol-spec broker sdk-go sdk-cgo conformance examples
FUZZTIME ?= 3s
BENCHTIME ?= 1s

PREFIX ?= /usr/local

.PHONY: all build install run test test-short deps gen gen-check lint unit gowork-off fuzz-smoke bench bench-compare bench-smoke conformance-matrix reference-kafka reference-kafka-stop clean

all: build

## build: compile every module; binaries land in bin/, libspool (the C ABI) in sdk-cgo/build/
build:
	@mkdir -p bin
	@for m in $(MODULES); do scripts/each-module.sh $$m build || exit 1; done
	@if [ -d broker/cmd/spoold ]; then cd broker && $(GO) build -o ../bin/spoold ./cmd/spoold; fi
	@if [ -d sdk-go/cmd/spool ]; then cd sdk-go && $(GO) build -o ../bin/spool ./cmd/spool; fi
	@if [ -d conformance/cmd/spool-conformance ]; then cd conformance && $(GO) build -o ../bin/spool-conformance ./cmd/spool-conformance; fi
	@$(MAKE) --no-print-directory -C sdk-cgo GO=$(GO)

# What the binaries are built from (Go sources without tests, the console's embedded files,
# the module files): a binary newer than all of them is current, and make install reuses it.
BIN_SRC := $(shell find protocol-spec broker sdk-go -name '*.go' -not -name '*_test.go' 2>/dev/null) \
	$(shell find broker/internal/console/static -type f 2>/dev/null) go.work $(wildcard */go.mod */go.sum)

bin/spoold: $(BIN_SRC)
	@mkdir -p bin
	cd broker && $(GO) build -o ../bin/spoold ./cmd/spoold

bin/spool: $(BIN_SRC)
	@mkdir -p bin
	cd sdk-go && $(GO) build -o ../bin/spool ./cmd/spool

## install: install spoold and spool into $(PREFIX)/bin and libspool (headers, libspool.so/.a,
## spool.pc) under $(PREFIX) (PREFIX defaults to /usr/local). What make build made is reused:
## only a binary or library older than its sources is built again
install: bin/spoold bin/spool
	install -d $(PREFIX)/bin
	install -m 0755 bin/spoold bin/spool $(PREFIX)/bin/
	@$(MAKE) --no-print-directory -C sdk-cgo GO=$(GO) install PREFIX=$(abspath $(PREFIX))

## run: build and start a single-node broker on 127.0.0.1:$(PORT) (default 9092) with data under
## $(DATA) (default ./data): make run PORT=9093 DATA=/tmp/spool-2 starts a second one beside it
# Only from make's command line (or this file): a PORT or DATA in the environment (set for
# another program) does not move the broker.
PORT := $(if $(filter command line,$(origin PORT)),$(PORT),9092)
DATA := $(if $(filter command line,$(origin DATA)),$(DATA),./data)
run: build
	@if [ ! -x bin/spoold ]; then echo "make run: the broker (broker/cmd/spoold) is not built yet" >&2; exit 1; fi
	./bin/spoold --listen 127.0.0.1:$(PORT) --data-dir $(DATA)

## test: install what the tests need, then run every check and test (build comes before the
## tests: the ones that run make install or the binaries then find them in the build cache)
test: deps gen-check lint build unit gowork-off fuzz-smoke bench-smoke

deps:
	@scripts/install-deps.sh

## gen: regenerate the codec from protocol-spec/messages and errors.tsv
gen:
	cd protocol-spec && $(GO) run ./cmd/specgen

## gen-check: fail when the committed generated code is not what specgen produces
gen-check:
	cd protocol-spec && $(GO) run ./cmd/specgen -check

lint:
	@out=$$(gofmt -l $(MODULES) bench); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do scripts/each-module.sh $$m vet || exit 1; done
	cd bench && GOWORK=off $(GO) vet .

## unit: every module's tests in one go test run (scripts/test-all.sh): packages of every module
## share the two cores, since most of the long ones wait on brokers, ZooKeeper and JVMs; it ends
## with the slowest tests, each package's time and "N passed, N failed, N skipped"
unit:
	@scripts/test-all.sh

## test-short: a developer's inner loop in about a minute: go test -short without the race
## detector (tests that start processes, clusters or JVMs skip themselves); deps are not installed
test-short:
	@scripts/test-all.sh -short

## gowork-off: every module also builds on its own, through its replace directives
gowork-off:
	@for m in $(MODULES); do GOWORK=off scripts/each-module.sh $$m build || exit 1; done

## fuzz-smoke: run every fuzz target for FUZZTIME
fuzz-smoke:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz-smoke.sh

## bench: run every benchmark once (BENCHTIME per benchmark)
bench:
	@for m in $(MODULES); do BENCHTIME=$(BENCHTIME) scripts/each-module.sh $$m bench || exit 1; done

## bench-compare: Apache Kafka 3.9 and Spool side by side on this machine (same workloads and
## load generators, interleaved, medians and ratios; single nodes W1-W6, then C1 and C2: three-broker
## clusters on ZooKeeper, RF 3, acks=all, throughput, failover under kill -9 and end-to-end latency) into docs/benchmarks.md and docs/bench-*.png;
## QUICK=1: a smoke run in seconds, its report under bench/.cache/quick-report/; BENCHFLAGS=-help lists the rest
bench-compare: build
	cd bench && GOWORK=off $(GO) run . $(if $(filter-out 0,$(QUICK)),-quick) $(BENCHFLAGS)

## bench-smoke: bench-compare QUICK=1 (every workload, the cluster one included), run by make test so the harness keeps working
bench-smoke:
	@$(MAKE) --no-print-directory bench-compare QUICK=1

## conformance-matrix: the conformance suite against Spool and Apache Kafka (single nodes with every
## driver, 3-broker clusters with the cluster and client cases) into docs/conformance.md; then the README's
## Conformance commands, make reference-kafka's block included
conformance-matrix:
	cd conformance && CONFORMANCE_MATRIX=$(CURDIR)/docs/conformance.md $(GO) test -count=1 -timeout 30m -run 'TestSuite$$|TestSuiteCluster$$' .
	cd conformance && CONFORMANCE_README_KAFKA=1 $(GO) test -count=1 -timeout 15m -run 'TestReadmeConformance$$' ./cmd/spool-conformance

KAFKA_VERSION := 3.9.2
KAFKA_LIBS := bench/.cache/kafka-$(KAFKA_VERSION)/libs
## the state and data of the conformance targets: reference-kafka's brokers, and those
## spool-conformance --target starts for a run
TARGETS_DIR := bench/.cache/conformance-targets

# Apache Kafka's jars from Maven Central, as make bench-compare fetches them (same place, same marker).
$(KAFKA_LIBS)/.complete: bench/pom.xml
	rm -rf $(KAFKA_LIBS)
	mvn -q -B -f bench/pom.xml dependency:copy-dependencies -DincludeScope=runtime -Dkafka.version=$(KAFKA_VERSION) -DoutputDirectory=$(CURDIR)/$(KAFKA_LIBS)
	touch $@

## reference-kafka: start Apache Kafka 3.9 on loopback, a single KRaft node and a 3-broker ZooKeeper-mode
## cluster (Debian's zookeeper), left running, and print their bootstrap addresses; state under bench/.cache/conformance-targets
reference-kafka: $(KAFKA_LIBS)/.complete
	@mkdir -p bin
	@cd conformance && $(GO) build -o ../bin/spool-conformance ./cmd/spool-conformance
	bin/spool-conformance reference-kafka --targets-dir $(TARGETS_DIR) --kafka-libs $(KAFKA_LIBS)

## reference-kafka-stop: stop the brokers make reference-kafka started
reference-kafka-stop:
	@if [ -x bin/spool-conformance ]; then bin/spool-conformance reference-kafka --stop --targets-dir $(TARGETS_DIR); \
	else cd conformance && $(GO) run ./cmd/spool-conformance reference-kafka --stop --targets-dir ../$(TARGETS_DIR); fi

clean:
	rm -rf bin sdk-cgo/build
