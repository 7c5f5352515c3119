# tocsin: the two README commands are `make demo` and `make test`.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
RELEASE_DIR := build/release
TEST_DIR := build/test
FUZZ_DIR := build/fuzz
TSAN_DIR := build/tsan
# The unit tests whose code runs threads (agent and controller loops, informers, the Lease,
# bounded calls, the ranks' coordinator, parallel log reading): built and run under ThreadSanitizer.
TSAN_TESTS := sys_test ranks_test k8s_test nccl_test bench_test agent_test controller_test jobview_test
FUZZ_SECONDS ?= 30
CMAKE_COMMON := -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
# The compiler cache lives beside the control plane's (outside the repository, kept between runs
# on a CI machine as that one is); paths relative to the checkout, so any clone of it hits.
CCACHE_DIR ?= $(if $(filter 0,$(shell id -u)),/var/cache/tocsin/ccache,$(HOME)/.cache/ccache)
CCACHE_BASEDIR := $(CURDIR)
CCACHE_NOHASHDIR := true
CCACHE_MAXSIZE ?= 10G
export CCACHE_DIR CCACHE_BASEDIR CCACHE_NOHASHDIR CCACHE_MAXSIZE

.PHONY: all deps build image demo test test-build tsan-build fuzz-build fuzz format clean k8s-up k8s-down

all: build

deps:
	@tools/deps.sh

# Release build of the binary (what the demo and users run).
build: deps
	@cmake -S . -B $(RELEASE_DIR) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Release -DTOCSIN_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(RELEASE_DIR) -j $(JOBS)

# One OCI image (agent, controller, benchmarks) from Debian's packages, without a Docker engine:
# build/image/tocsin.oci.tar, tagged tocsin:<version> (tools/image/build.sh says how).
image: build
	@tools/image/build.sh $(RELEASE_DIR)/tocsin build/image

# The main job on this machine: inspect this node.
demo: build
	@echo "== tocsin node (this machine) =="
	@$(RELEASE_DIR)/tocsin node --observe-only
	@echo
	@echo "== tocsin node --root testdata/nodes/ib-port-down (a broken fixture node) =="
	@$(RELEASE_DIR)/tocsin node --root testdata/nodes/ib-port-down --expect-rate 200 --observe-only
	@echo
	@echo "== tocsin nccl on a job log where one host fell back to TCP sockets =="
	@$(RELEASE_DIR)/tocsin nccl src/nccl/testdata/mixed-2.30-kubectl.log --observe-only
	@echo
	@echo "== tocsin audit of a cluster snapshot whose RDMA device plugin never became ready =="
	@$(RELEASE_DIR)/tocsin audit --from testdata/clusters/plugin-crashloop.json \
	  --now 2026-11-29T00:00:00Z --observe-only
	@echo
	@echo "== tocsin bench net: 4 local ranks, ring allreduce over TCP sockets =="
	@$(RELEASE_DIR)/tocsin bench net --local 4 -t allreduce -b 1K -e 16M -f 4 -c 1 --observe-only
	@echo
	@echo "== tocsin bench net --require rdma: this machine has no RDMA, so it refuses =="
	@$(RELEASE_DIR)/tocsin bench net --local 2 --transport fabric --require rdma --observe-only
	@echo
	@echo "== tocsin bench storage on this machine's disk =="
	@d=$$(mktemp -d /tmp/tocsin-demo-XXXXXX) && \
	  $(RELEASE_DIR)/tocsin bench storage --path $$d -j 2 --size 64M --files 200 --observe-only; \
	  rm -rf $$d
	@echo
	@echo "== tocsin agent --no-kube on the broken fixture node: some of its metrics, then SIGTERM =="
	@log=$$(mktemp /tmp/tocsin-demo-agent-XXXXXX); \
	  $(RELEASE_DIR)/tocsin agent --no-kube --root testdata/nodes/ib-port-down \
	    --listen 127.0.0.1:0 --reconcile 200ms 2>$$log & pid=$$!; \
	  for i in $$(seq 100); do grep -q "ready:" $$log && break; sleep 0.1; done; sleep 0.5; \
	  port=$$(sed -n 's/.*serving .* on 127.0.0.1:\([0-9]*\).*/\1/p' $$log); \
	  python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:$$port/metrics').read().decode())" | \
	    grep -E '^tocsin_(rdma_port_up|rdma_port_rate|check_status\{check="rdma|node_condition\{condition="RDMA)'; \
	  kill -TERM $$pid; wait $$pid; cat $$log; rm -f $$log
	@echo
	@echo "== tocsin controller watching a (test) API server whose device plugin crash-loops, then SIGTERM =="
	@tools/demo_controller.sh $(RELEASE_DIR)/tocsin

# Warnings are errors; AddressSanitizer + UBSan; then the fuzz targets are built (clang) and run on
# their seed corpora as part of ctest.
test-build: deps
	@cmake -S . -B $(TEST_DIR) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON \
	  -DTOCSIN_SANITIZE=ON -DTOCSIN_BUILD_TESTS=ON >/dev/null
	@cmake --build $(TEST_DIR) -j $(JOBS)

# ThreadSanitizer: the threaded unit tests only (the integration tests run the ASan binary).
tsan-build: deps
	@cmake -S . -B $(TSAN_DIR) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON \
	  -DTOCSIN_TSAN=ON -DTOCSIN_BUILD_TESTS=ON >/dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS) --target $(TSAN_TESTS)

fuzz-build: deps
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Debug \
	  -DTOCSIN_FUZZ=ON -DTOCSIN_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS)

# The real control plane (tools/k8s, built once per machine and cached in /var/cache/tocsin) is
# brought up once for the suite, in its own state folder and namespaces, and always taken down.
# As root (CI, and the README's set-up) a test that would skip for want of root, FUSE, network
# namespaces or the control plane fails instead (src/testing/skip.h): TOCSIN_NO_SKIP=0 to allow.
TOCSIN_NO_SKIP ?= $(if $(filter 0,$(shell id -u)),1,0)
export TOCSIN_NO_SKIP
K8S_TEST_ENV := K8S_STATE=$(CURDIR)/build/k8s-test K8S_NETNS_PREFIX=tt K8S_SUBNET=10.78.1 \
  K8S_TOCSIN=$(CURDIR)/$(TEST_DIR)/tocsin
test: test-build tsan-build fuzz-build
	@trap '$(K8S_TEST_ENV) tools/k8s/down.sh' EXIT; trap 'exit 130' INT TERM; \
	  $(K8S_TEST_ENV) tools/k8s/up.sh >/dev/null || exit 1; \
	  status=0; \
	  (cd $(TEST_DIR) && TOCSIN_K8S_ENV=$(CURDIR)/build/k8s-test/env ctest --output-on-failure -j $(JOBS)) || status=1; \
	  (cd $(TSAN_DIR) && TSAN_OPTIONS="suppressions=$(CURDIR)/tools/tsan.supp" \
	    ctest --output-on-failure -j $(JOBS) \
	    -R '^($(subst $(eval) ,|,$(TSAN_TESTS)))$$') || status=1; \
	  (cd $(FUZZ_DIR) && ctest --output-on-failure -j $(JOBS)) || status=1; \
	  exit $$status

# A real Kubernetes 1.20.2 control plane with the test kubelet, by hand (see README, Development).
k8s-up: build
	@tools/k8s/up.sh

k8s-down:
	@tools/k8s/down.sh

# Runs every fuzz target for FUZZ_SECONDS each.
fuzz: fuzz-build
	@for f in $(FUZZ_DIR)/fuzz/fuzz_*; do \
	  [ -x "$$f" ] || continue; name=$$(basename $$f); echo "== $$name ($(FUZZ_SECONDS)s)"; \
	  \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/fuzz/corpus/$$name fuzz/corpus/$$name || exit 1; \
	done

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@K8S_STATE=$(CURDIR)/build/k8s-test tools/k8s/down.sh; tools/k8s/down.sh; rm -rf build
