# bl — a git-native, file-backed backlog.
GO      ?= go
BIN     ?= bin/bl
# bl-git, the same command line with git built in, goes next to bl: bl
# finds it there when a command needs git.
BIN_GIT ?= $(dir $(BIN))bl-git
PREFIX  ?= $(HOME)/.local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/bl-backlog/bl/internal/cli.version=$(VERSION)
# A count rather than a duration: a duration deadline can end a fuzz run
# with "context deadline exceeded" while the engine is between inputs.
FUZZTIME ?= 20000x
# Targets whose every input builds and compacts a backlog on disk run for
# fewer inputs.
FUZZTIME_DISK ?= 1000x
FUZZ_DISK     := FuzzIndexedLoad

.PHONY: all build install test vet bench demo fuzz stress clean dist house

all: build

# CGO_ENABLED=0: kong links os/user, which with cgo makes bl a dynamic
# binary that loads libc and starts cgo's threads on every call (about
# 1.5 ms of CPU, more than the whole floor); bl needs nothing from cgo.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/bl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_GIT) ./cmd/bl-git

install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN) $(PREFIX)/bin/bl
	install -m 0755 $(BIN_GIT) $(PREFIX)/bin/bl-git
	@echo "installed bl and bl-git in $(PREFIX)/bin"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) \
	  echo "$(PREFIX)/bin is not on your PATH; add it, e.g. in ~/.bashrc or ~/.zshrc:"; \
	  echo "    export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

vet:
	$(GO) vet ./...

# The whole suite under the race detector: unit tests, CLI scripts, the
# process race and crash harnesses at CI size. atexit_sleep_ms=0: a -race
# binary otherwise sleeps a second as it exits, every test binary and
# every process a test starts from one. The longest packages go first
# (go test starts packages in the order given), so that none of them runs
# alone at the end while the second core idles; and four run at once
# (go test's default is one per core), as several spend most of their
# time waiting on processes, leases and browsers. -vet=off: make vet has
# just run every analyzer go test would. -ldflags=-w: the test binaries
# are linked without DWARF, a third less linking; panics and race reports
# still name file and line (they read the binary's own line table).
SLOW_PKGS := ./proof/ ./internal/cli/ ./ledger/gitsync/
test: vet
	GORACE="$${GORACE:-atexit_sleep_ms=0}" $(GO) test -race -vet=off -ldflags=-w -p 4 -count=1 -timeout 30m $(SLOW_PKGS) ./...

# A short run of every fuzz target.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    n=$(FUZZTIME); case " $(FUZZ_DISK) " in *" $$t "*) n=$(FUZZTIME_DISK);; esac; \
	    echo "fuzz $$pkg $$t ($$n)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$n $$pkg; \
	  done; \
	done

# Library benchmarks, then whole-process figures next to the floor; the
# table goes to docs/PERFORMANCE.md.
# The paired table runs bl as built from BENCH_BASE (where the last round
# of start-up work began; set it to compare another) next to this bl.
BENCH_BASE ?= a4fb941
bench: build bin/bl-before
	$(GO) test -run '^$$' -bench '^Benchmark[^H]' -benchmem -benchtime 2000x ./ledger/ ./ledger/internal/wire/ | tee bin/bench-go.txt
	$(GO) test -run '^$$' -bench '^BenchmarkHistoryChanges$$' -benchmem -benchtime 3x ./ledger/ | tee -a bin/bench-go.txt
	$(GO) test -run '^$$' -bench '^Benchmark(ListJSON|Show)100k$$' -benchmem -benchtime 3x ./internal/cli/ | tee -a bin/bench-go.txt
	$(GO) run ./internal/benchrun -bl $(BIN) -before bin/bl-before -out docs/PERFORMANCE.md

# bl as BENCH_BASE built it: static, as its Makefile built it (set
# BENCH_CGO=1 for a base whose Makefile left cgo on, such as 986d451).
BENCH_CGO ?= 0
bin/bl-before:
	rm -rf bin/before-src && mkdir -p bin/before-src
	git archive $(BENCH_BASE) | tar -x -C bin/before-src
	cd bin/before-src && CGO_ENABLED=$(BENCH_CGO) $(GO) build -trimpath -ldflags '-s -w -X github.com/bl-backlog/bl/internal/cli.version=$(BENCH_BASE)' -o ../bl-before ./cmd/bl
	rm -rf bin/before-src

demo: build
	./scripts/demo.sh $(BIN)

# The race and crash harnesses at full size (64 processes, 1500 kills);
# the claim arbiter's proof at 4 clones x 4 processes, server restarts and a
# 3-node NATS cluster losing a node; gitsync's claim race at 50 cards; and
# the cross-compilation check of the platform-specific packages.
stress:
	BL_STRESS=1 $(GO) test -race -count=1 -timeout 60m -v ./proof/
	BL_STRESS=1 $(GO) test -race -count=1 -run '^TestRemoteClaimsRace$$' ./ledger/gitsync/
	BL_STRESS=1 $(GO) test -count=1 -run '^TestCrossBuild$$' ./internal/dist/

# The figures of the house CONTRIBUTING.md tracks: sizes, long and
# complex functions, long files, duplicate pairs (with the duplicates
# command, when it is on PATH).
house:
	$(GO) run ./internal/house

# Release archives for linux, darwin and windows on amd64 and arm64, with
# SHA256SUMS, in dist/: reproducible (the same commit gives the same
# bytes), so a release is a tag and an upload.
dist:
	rm -rf dist
	$(GO) run ./internal/dist -version $(VERSION) -out dist

clean:
	rm -rf bin dist
