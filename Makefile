# Facet: build, run and test. `make test` is what CI runs (.ci/run).
GO        ?= go
PYTHON    ?= python3
BIN       := bin/facet
VENV      := test/e2e/.venv
PY_REQS   := test/e2e/py/requirements.txt
# Fuzzing time per target: short inside `make test`, longer for `make fuzz`.
TEST_FUZZTIME ?= 10s
FUZZTIME      ?= 10m
# The long campaign records each target's run here, resumes with
# FUZZ_RESUME=1, and commits up to this many corpus entries per target.
FUZZ_RESULTS  ?= docs/benchmarks/fuzz-campaign.tsv
FUZZ_CORPUS   ?= 200
# What `facet version` says (internal/buildinfo); a build without them (go
# build, go install) falls back on the toolchain's VCS stamp.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO  := github.com/facet-sds/facet/internal/buildinfo
LDFLAGS    := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(BUILD_DATE)

# The steps of `make test` run in the order written, never side by side.
.NOTPARALLEL:
.PHONY: all build run test vet deps unit fuzz fuzz-quick e2e e2e-go e2e-gateway e2e-py bench clean redis-start redis-stop wasm-examples

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/facet

run: build
	./scripts/run.sh

test: vet unit fuzz-quick e2e-go e2e-gateway e2e-py

vet:
	$(GO) vet ./...

# System packages the tests need (redis-server; promtool, which checks the
# /metrics exposition: FACET_SKIP_PROMTOOL=1 skips that check where it cannot
# be installed), installed when missing.
deps:
	./scripts/ensure-deps.sh
	@# the remote-backend tests run a real versitygw, built once into a cache outside the repo
	[ "$$FACET_SKIP_VERSITYGW" = 1 ] || ./bench/peers/versitygw.sh install

unit: deps
	$(GO) test -race -count=1 ./internal/... ./cmd/...

fuzz-quick:
	FUZZTIME=$(TEST_FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) FUZZ_RESULTS=$(FUZZ_RESULTS) FUZZ_COMMIT_CORPUS=$(FUZZ_CORPUS) ./scripts/fuzz.sh

e2e: e2e-go e2e-py

# The example WebAssembly filters and the hostile test module, into bin/wasm
# (the Rust example only where rustc has the wasm32-wasip1 target; it says so).
wasm-examples:
	GO=$(GO) ./scripts/wasm-examples.sh

e2e-go: build wasm-examples
	FACET_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 20m ./test/e2e/

# The S3 conformance e2e again, through `facet gateway` over versitygw (with
# redis-server and `facet bus`): the tests that do not look into a data
# directory, minus three whose keys versitygw's posix store cannot hold
# ("a" beside "a/b", "..", "a//b", control bytes): TestHostileKeys,
# TestListEncodingTypeURL, TestVirtualHostStyle.
E2E_GATEWAY_TESTS := ^(TestObjectPutGetHeadDelete|TestRangeGets|TestConditionalGets|TestResponseOverrides|TestCopyObject|TestDeleteObjects|TestBucketLifecycle|TestInvalidBucketNames|TestMultipartClients|TestMultipartLowLevel|TestListObjectsPaging|TestChecksums|TestChecksumMismatch|TestPresignedURLs|TestAuthFailures|TestCrossTenantDenial|TestMalformedXML|TestMetadataTooLarge|TestAtomicOverwrite|TestDeleteBucketWithUploads|TestListObjectVersions)$$
e2e-gateway: build
	FACET_E2E_TARGET=gateway FACET_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 10m -run '$(E2E_GATEWAY_TESTS)' ./test/e2e/

# The venv is rebuilt whenever the pinned requirements change.
$(VENV)/.installed: $(PY_REQS)
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check --no-input -q -r $(PY_REQS)
	touch $@

e2e-py: build wasm-examples $(VENV)/.installed
	FACET_BIN=$(abspath $(BIN)) $(VENV)/bin/python -m pytest -p no:cacheprovider -q -rfEs test/e2e/py

# Each benchmark compares Facet with what it replaces, in the same run;
# the figures go to docs/benchmarks/ (one page per subject, indexed by
# docs/benchmarks.md).
bench: build
	./$(BIN) bench spine
	./$(BIN) bench pipeline
	./$(BIN) bench range
	# Workload metrics: 4 KiB PUT/GET with them on vs off, bus traffic vs Crystal's model.
	./$(BIN) bench metrics
	# The audit log: 4 KiB PUT/GET through facet serve with --audit-log vs without.
	./$(BIN) bench audit
	# TLS: 4 KiB and 64 MiB PUT/GET over HTTPS vs plain HTTP.
	./$(BIN) bench tls
	$(GO) test -run='^$$' -bench='Compression|Decompression|Encryption|Noop' -benchtime=2s -cpu=1 ./internal/filter/native/
	# Sandboxed filters: 1 MiB PUT/GET with no filter, native noop, 1/2/4 WASM noops (Go) and the Rust one; instance start; WASM xor vs native Go.
	GO=$(GO) ./scripts/wasm-examples.sh
	./$(BIN) bench wasm --modules bin/wasm
	# Prometheus exporter: 4 KiB PUT/GET with and without it, its cost per request, filter timing.
	$(GO) test -run='^$$' -bench=. -benchtime=2s -cpu=1 ./internal/promexp/
	# BSC's Swift I/O paper (IEEE SC2 2017), Fig. 1-4: 2..32 concurrent 256 MiB GET streams from the disk, one thread per stream vs round-robin pool (Jain's index); classification cost.
	./$(BIN) bench streams
	# QoS (IOStack D2.2 Table 9.4a, Crystal Fig. 7): SLO splits across two gateways, accuracy, convergence, utilisation, Jain; shaping cost vs --qos-off.
	./$(BIN) bench qos
	$(GO) test -run='^$$' -bench='WaitN|Meter|Stream' -benchtime=1s -cpu=1 ./internal/qos/
	$(GO) test -run='^$$' -bench=FrontEnd -benchtime=1s ./internal/flowctx/
	# S3 Select push-down (IOStack D2.2 §9.4.3): 2%-of-rows query vs GET + DuckDB, scan MB/s, Fig. 25 drop curve, CSV and Parquet.
	$(MAKE) $(VENV)/.installed
	$(VENV)/bin/python bench/select_pushdown.py --bin $(BIN) --size $${SELECT_BENCH_SIZE:-1GiB}
	$(GO) test -run='^$$' -bench=CSVScan -benchtime=3x -cpu=1 ./internal/s3select/
	# Dashboard: 4 KiB GETs with 10 dashboards streaming the live plots vs none (goal >= 0.98x).
	FACET_BIN=$(abspath $(BIN)) $(GO) test -run='^$$' -bench=UIOverhead -benchtime=1x ./internal/bench/
	# Caching over versitygw (Crystal Fig. 5 and 6(b)): dynamic caching on oscillating 1 MiB GETs, the Arctur-like trace with and without caching, PUT admission overhead.
	./$(BIN) bench cache
	# Block storage (IOStack D2.2 §9.4.4, HARNESS D5.1 §4): fio through Facet's NBD vs nbdkit's file plugin, the 4-volume 3/5/7/7 MB/s and 3K/5K/7K/7K IO/s throttles, xor and AES-XTS filter cost, TLS-PSK cost (nbdcopy plain vs TLS 1.3 PSK vs nbdkit --tls-psk).
	./$(BIN) bench nbd
	$(GO) test -run='^$$' -bench=Filters -benchtime=1s -cpu=1 ./internal/block/bfilter/
	# Scale-out: GET/PUT 4 KiB and 64 MiB through facet gateway over versitygw vs straight to versitygw, then two gateways vs one with CPU.
	./bench/peers/versitygw.sh install
	./$(BIN) bench remote

# A local Redis for `facet serve --meta $$(scripts/redis.sh url)`.
redis-start:
	./scripts/redis.sh start

redis-stop:
	./scripts/redis.sh stop

clean:
	rm -rf bin $(VENV)
	find test/e2e/py -name __pycache__ -type d -prune -exec rm -rf {} +
