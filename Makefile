# Thin wrapper over CMake (as Neovim does). Everything real is in
# CMakeLists.txt; this file only names the common runs.
#
#   make            build everything (build/): pawl, the libraries, the
#                   manual pages, the tests and benchmarks
#   make deps       deps-build + deps-test (root, idempotent)
#   make deps-build install what building and `make run` need: the
#                   compiler and tools, the libraries pawl links, scdoc,
#                   tzdata, and Debian's LuaJIT source
#   make deps-test  install what only the tests need on top: PostgreSQL,
#                   busted, nginx, LÖVE, Prometheus, node and the cron
#                   tests' reference library, tmux, curl, groff, man
#   make run        deps-build, build the pawl program only, then run the
#                   example story on ./pawl.db
#   make test       deps + build everything + every test (ctest)
#   make test-min   the smallest build (build-min: no PostgreSQL, HTTP nor
#                   curl) and its tests, which check it needs none of them
#   make test-asan  the whole suite under AddressSanitizer + UBSan
#   make test-tsan  the threaded tests under ThreadSanitizer
#   make bench      store, worker host and cron benchmarks (Release build)
#   make install PREFIX=DIR   bin/pawl and its manual pages
#                   (share/man/man1, man5), the header, the libraries,
#                   the Lua module and pawl.pc
#   make print-deps-build, make print-deps-test   the package lists

BUILD_TYPE ?= RelWithDebInfo
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_FLAGS ?= --output-on-failure -j$(JOBS)

# Debian 12 packages, in two sets. What building pawl and running it
# need (make run): compiler and build tools (dpkg-dev and patch fetch and
# patch Debian's LuaJIT source), the libraries pawl links (SQLite,
# libpq, libuv, libedit for the console's line editing, libcurl for
# webhooks, libmicrohttpd for metrics), tzdata for time zones, and scdoc
# for the manual pages.
DEPS_BUILD = build-essential cmake pkg-config dpkg-dev patch \
  libsqlite3-dev libuv1-dev libpq-dev libedit-dev \
  libcurl4-openssl-dev libmicrohttpd-dev tzdata scdoc

# What only the tests need, on top: busted and lua-cjson (the specs), the
# sqlite3 shell, the PostgreSQL server the tests start (one throwaway
# server per run), tmux, the terminal the console's specs type into, curl,
# the HTTP client the libuv server example is driven with, nginx and its
# lua module for examples/nginx, love (LÖVE 11) for examples/love,
# prometheus for the metrics spec, groff and man for the installed manual
# pages, and node for the cron reference library. nginx's lua module
# needs OpenResty's LuaJIT (libluajit2-5.1-2), which conflicts with
# Debian's libluajit-5.1-2: hence luajit2 and libluajit2-5.1-dev (pawl
# builds its own LuaJIT from Debian's luajit source either way; love
# takes either; example.own_luajit links libluajit2-5.1-dev's).
DEPS_TEST = libluajit2-5.1-dev luajit2 lua-cjson lua-busted sqlite3 \
  postgresql tmux curl nginx libnginx-mod-http-lua love prometheus \
  groff-base man-db $(NODE_PACKAGES)

# node and npm run the independent cron implementation the cron tests
# compare against (spec/support/cronref, pinned by its package-lock.json).
# A machine that already has them (nodesource's nodejs bundles npm) keeps
# its own.
NODE_PACKAGES = $(if $(shell command -v node 2>/dev/null),,nodejs) \
  $(if $(shell command -v npm 2>/dev/null),,npm)
CRONREF = spec/support/cronref

.PHONY: all build deps deps-build deps-test run test test-min test-asan \
  test-tsan bench clean install print-deps-build print-deps-test

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build build -j$(JOBS)

# Installs the packages of $(1) that are missing; apt-get update runs
# only then.
define apt_install
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" \
    || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  echo "installing:$$missing"; \
  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root to install:$$missing" >&2; exit 1; fi; \
  export DEBIAN_FRONTEND=noninteractive; \
  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
else echo "deps: all installed"; fi
endef

deps: deps-build deps-test

deps-build:
	$(call apt_install,$(DEPS_BUILD))
	@./cmake/fetch-luajit.sh third_party/luajit

deps-test: deps-build
	$(call apt_install,$(DEPS_TEST))
	@if [ $(CRONREF)/node_modules/.package-lock.json -nt $(CRONREF)/package-lock.json ]; \
	then echo "deps: $(CRONREF) installed"; \
	else npm ci --prefix $(CRONREF) --no-audit --no-fund; fi

print-deps-build:
	@echo $(DEPS_BUILD)

print-deps-test:
	@echo $(DEPS_TEST)

# The example story on ./pawl.db: enqueue the jobs in scripts/ and run the
# host until Ctrl-C. One job succeeds, one fails twice and then succeeds,
# one is retried and ends in the dead-letter set, one reports progress and
# enqueues another job. Only the pawl program is built.
run: deps-build
	cmake -S . -B build -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build build -j$(JOBS) --target pawl
	./build/pawl migrate
	./build/pawl enqueue send_welcome '{"to":"ada@example.com"}'
	./build/pawl enqueue flaky_upload '{"file":"report.pdf"}'
	./build/pawl enqueue charge_card '{"amount":4200,"card":"4242"}'
	./build/pawl enqueue nightly_report '{"sections":5,"mail_to":"ops@example.com"}'
	@echo "--- pawl run: Ctrl-C stops it (running jobs finish first) ---"
	./build/pawl run

test: deps build
	cd build && ctest $(CTEST_FLAGS)

# The build without the optional libraries (docs/embedding.md, "Build
# options"): every test that needs none of them, and spec.min_build_spec, which checks that
# libpawl, the CLI and the Lua module need none (ldd, nm) and that each
# missing feature is refused with a message saying how to get it.
test-min: deps
	cmake -S . -B build-min -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DPAWL_WITH_POSTGRES=OFF -DPAWL_WITH_HTTP=OFF -DPAWL_WITH_CURL=OFF
	cmake --build build-min -j$(JOBS)
	cd build-min && ctest $(CTEST_FLAGS)

test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPAWL_SANITIZE=address
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ctest $(CTEST_FLAGS)

test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DPAWL_SANITIZE=thread
	cmake --build build-tsan -j$(JOBS)
	cd build-tsan && ctest $(CTEST_FLAGS) -L threads

bench: deps
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release
	cmake --build build-release -j$(JOBS) --target pawl_store_bench pawl pawl_cron_bench
	./build-release/pawl_store_bench
	./build-release/pawl_cron_bench
	./build-release/pawl bench --runs 5

clean:
	rm -rf build build-min build-asan build-tsan build-release

# Installs bin/pawl, its manual pages (share/man/man1 and man5: `man
# pawl` once PREFIX/share/man is on the MANPATH, as /usr/local's is), the
# header, libpawl.a/.so, the Lua module and pawl.pc under PREFIX (default
# /usr/local): `pkg-config --cflags --libs pawl` then finds the library
# (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig).
PREFIX ?= /usr/local
install: build
	cmake --install build --prefix $(PREFIX)
