# ferry: see README.md. `make help` lists the targets.

VARIANT ?= release
CC ?= cc
DEB_PACKAGES := build-essential pkg-config libssh2-1-dev libssl-dev \
	libxxhash-dev libzstd-dev libuv1-dev openssh-server openssh-client \
	rsync zstd time python3 python3-jsonschema iproute2 procps openssl \
	util-linux libarchive-tools man-db groff-base bsdextrautils \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross libuv1-dev:arm64 \
	libzstd-dev:arm64 qemu-user-static g++ libtorrent-rasterbar-dev \
	cmake libboost-dev debootstrap g++-aarch64-linux-gnu libssl-dev:arm64

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Werror
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -pthread $(WARN)

ifeq ($(VARIANT),tsan)
  OUT := build/tsan
  BINDIR := build/tsan/bin
  VFLAGS := -O1 -g -fsanitize=thread
  AGENT_LDFLAGS := -fsanitize=thread
  AGENT_LIBS := -luv -lzstd -lpthread
else ifeq ($(VARIANT),asan)
  OUT := build/asan
  BINDIR := build/asan/bin
  VFLAGS := -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
  AGENT_LDFLAGS := -fsanitize=address,undefined
  AGENT_LIBS := -luv -lzstd -lpthread
else
  OUT := build/release
  BINDIR := bin
  VFLAGS := -O2 -g
  # The agent runs on bare boxes (a fresh Ubuntu container has none of
  # our libraries): link it statically, glibc included.
  AGENT_LDFLAGS := -static -Wl,--gc-sections
  AGENT_LIBS := /usr/lib/x86_64-linux-gnu/libuv_a.a -lzstd -lpthread -ldl
  # The agent is uploaded to boxes that lack it: without its debug
  # information (5 MiB of its 7.6), its symbols kept for perf and gdb.
  AGENT_STRIP := objcopy --strip-debug
endif
AGENT_STRIP ?= true

CFLAGS := $(BASE_CFLAGS) $(VFLAGS) $(EXTRA_CFLAGS)
LDFLAGS_CLIENT := $(VFLAGS)
CLIENT_LIBS := -lssh2 -lcrypto -luv -lzstd -lpthread

COMMON_SRC := $(wildcard common/*.c)
PROTO_SRC := $(wildcard proto/*.c)
ENGINE_SRC := $(wildcard engine/*.c engine/*/*.c)
CLIENT_SRC := $(wildcard client/*.c)
SERVER_SRC := $(wildcard server/*.c)
UNIT_SRC := $(wildcard tests/unit/*.c)
TOOL_SRC := $(wildcard tests/tools/*.c)

obj = $(patsubst %.c,$(OUT)/%.o,$(1))
LIB_OBJ := $(call obj,$(COMMON_SRC) $(PROTO_SRC) $(ENGINE_SRC))

FERRY := $(BINDIR)/ferry
AGENT := $(BINDIR)/ferry-agent
# The agent for aarch64 boxes (GH200, Graviton), cross-built and static
# like the other; the client uploads the one that fits the box.
AGENT_AARCH64 := $(BINDIR)/ferry-agent-aarch64
CC_AARCH64 := aarch64-linux-gnu-gcc
UNIT := $(OUT)/tests/test-unit
UNIT_TSAN := build/tsan/tests/test-unit
TOOLS := $(patsubst tests/tools/%.c,$(OUT)/tests/%,$(TOOL_SRC))
# The swarm helper (C++, libtorrent-rasterbar; docs/SWARM.md).
SWARM_BIN := $(BINDIR)/ferry-swarm
SWARM_AARCH64 := $(BINDIR)/ferry-swarm-aarch64
SWARM_SRC := swarm/ferry_swarm.cpp swarm/swarm_parts.cpp swarm/swarm_files.cpp
SWARM_HDR := swarm/swarm_helper.hpp swarm/swarm_files.hpp swarm/swarm_line.h
SWARM_CXXFLAGS := -std=c++17 -Wall -Wextra -Wshadow -Wformat=2 -Werror \
	$(VFLAGS)

.PHONY: all deps test check unit integration e2e asan tsan demo bench install \
	bench-quick bench-delta bench-streams bench-tensors bench-fanout fuzz clean \
	help check-minimal mutate spike-swarm spike-swarm-bin swarm

## all: build bin/ferry, bin/ferry-agent, bin/ferry-agent-aarch64 and
## bin/ferry-swarm
# The swarm helper is built in the release variant only: the sanitizer
# variants' tests use bin/ferry-swarm, whose libtorrent is not
# instrumented anyway.
ifeq ($(VARIANT),release)
all: $(FERRY) $(AGENT) $(AGENT_AARCH64) $(UNIT) $(TOOLS) $(SWARM_BIN) \
	$(SWARM_AARCH64)
else
all: $(FERRY) $(AGENT) $(UNIT) $(TOOLS)
endif

$(OUT)/%.o: %.c | $(OUT)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# header:package for each library ferry builds against.
DEP_HEADERS := libssh2.h:libssh2-1-dev openssl/evp.h:libssl-dev \
	xxhash.h:libxxhash-dev zstd.h:libzstd-dev uv.h:libuv1-dev

# Before the first compile, a quick look for each library's header (one
# preprocessor run each, a fraction of a second, redone only when this
# Makefile changes), so that a machine without them is told which
# package is missing and about `make deps`, not a compiler error halfway
# through the build.
$(OUT)/.deps-ok: Makefile
	@missing=""; for hp in $(DEP_HEADERS); do \
		h=$${hp%%:*}; p=$${hp#*:}; \
		printf '#include <%s>\n' "$$h" | \
			$(CC) $(CFLAGS) -E -x c - >/dev/null 2>&1 || \
			missing="$$missing $$p ($$h)"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "ferry: missing libraries:$$missing"; \
		echo "ferry: run 'make deps' (apt-get installs them), or" \
			"install these packages yourself"; \
		exit 1; \
	fi
	@mkdir -p $(dir $@) && touch $@

$(FERRY): $(LIB_OBJ) $(call obj,$(CLIENT_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ $(CLIENT_LIBS)

$(AGENT): $(LIB_OBJ) $(call obj,$(SERVER_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_LDFLAGS) -pthread -o $@ $^ $(AGENT_LIBS) 2>&1 | \
		{ grep -v 'statically linked applications requires' || true; }
	$(AGENT_STRIP) $@
	@test -x $@

build/aarch64/%.o: %.c | $(OUT)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC_AARCH64) $(BASE_CFLAGS) -O2 -MMD -MP -c $< -o $@

$(AGENT_AARCH64): $(patsubst %.c,build/aarch64/%.o,$(COMMON_SRC) \
		$(PROTO_SRC) $(ENGINE_SRC) $(SERVER_SRC))
	@mkdir -p $(dir $@)
	$(CC_AARCH64) -static -Wl,--gc-sections -pthread -o $@ $^ \
		/usr/lib/aarch64-linux-gnu/libuv_a.a -lzstd -lpthread -ldl 2>&1 | \
		{ grep -v 'statically linked applications requires' || true; }
	@test -x $@

# The client is unit-tested whole but for its main() (the control code
# driven without a network: tests/unit/test_client_*.c).
UNIT_CLIENT_OBJ := $(call obj,$(filter-out client/main.c,$(CLIENT_SRC)))

# The agent's parts that do not need its main().
UNIT_SERVER_OBJ := $(call obj,server/policy.c server/rendezvous.c)

# readlink and fstatat are wrapped so that a test can play a link target
# and a modification time that Linux's own file systems cannot hold
# (tests/unit/test_manifest_limits.c), and
# partial_key so that a test can give every path the same staging key
# (tests/unit/test_key_clash.c).
$(UNIT): $(LIB_OBJ) $(UNIT_CLIENT_OBJ) $(UNIT_SERVER_OBJ) \
		$(call obj,$(UNIT_SRC) swarm/swarm_line.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_CLIENT) -Wl,--wrap=readlink -Wl,--wrap=fstatat \
		-Wl,--wrap=partial_key \
		-pthread -o $@ $^ \
		$(CLIENT_LIBS)

# The swarm tests' torrent maker is the client's (OpenSSL's SHA-256).
$(OUT)/tests/torrent_make: $(OUT)/tests/tools/torrent_make.o $(LIB_OBJ) \
		$(call obj,client/torrent.c client/digest.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ -lcrypto -luv -lzstd -lpthread

# The swarm tests' certificates are the client's too (client/swarm_ca.c).
$(OUT)/tests/swarm_ca_make: $(OUT)/tests/tools/swarm_ca_make.o $(LIB_OBJ) \
		$(call obj,client/swarm_ca.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ -lcrypto -luv -lzstd -lpthread

$(OUT)/tests/%: $(OUT)/tests/tools/%.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ -luv -lzstd -lpthread

## deps: install missing Debian packages (idempotent, quick when present)
deps:
	@sh tests/deps.sh $(DEB_PACKAGES)

## test: unit, integration (local:) and end-to-end (loopback sshd) tests
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check-run

check: test

check-run:
	$(UNIT)
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/run.sh integration e2e

## unit: only the unit tests
unit: all
	$(UNIT)

## integration: only the local: integration tests
integration: all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/run.sh integration

## e2e: only the tests against a loopback sshd
e2e: all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/run.sh e2e

## asan: build with ASan+UBSan and run the unit and integration tests
## (the swarm test runs the release bin/ferry-swarm, built here if need be).
## Cases run 3-6x slower under them (receiver_max_pending, which feeds
## INCOMING_MAX_PENDING blocks: 44 s on an idle machine), so each gets
## 120 s.
asan: deps
	@$(MAKE) --no-print-directory VARIANT=asan all
	@$(MAKE) --no-print-directory swarm
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 FERRY_TEST_TIMEOUT=120 \
		build/asan/tests/test-unit
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	FERRY_BIN=build/asan/bin FERRY_TOOLS=build/asan/tests \
		bash tests/run.sh integration

## tsan: build with ThreadSanitizer and run the unit tests (the scan
## threads, the pool, the pumps); not part of CI's run. Cases run 5-10x
## slower under it (receiver_max_pending: 33 s), so each gets 120 s.
tsan: deps
	@$(MAKE) --no-print-directory VARIANT=tsan $(UNIT_TSAN)
	TSAN_OPTIONS=halt_on_error=1 FERRY_TEST_TIMEOUT=120 $(UNIT_TSAN)

## demo: push a generated dataset, change it, push again, pull it back
demo: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/demo.sh

## check-minimal: make test and make demo in a fresh minimal Debian 12 root
## (debootstrap minbase, kept in build/minimal-root; as root; tens of minutes)
check-minimal:
	@sh tests/deps.sh debootstrap && bash tests/minimal_root.sh

## bench: ferry side by side with rsync, scp and tar|ssh (minutes);
## BEFORE=REV also runs each ferry row with the build of git revision REV
bench: deps
	@$(MAKE) --no-print-directory all
	$(if $(BEFORE),FERRY_BENCH_BEFORE=$$(bash tests/bench/build_before.sh $(BEFORE)) \
		FERRY_BENCH_BEFORE_LABEL=$$(git rev-parse --short $(BEFORE)),) \
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench.sh full
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench_tensors.sh 256

## bench-tensors: real checkpoints (PyTorch: bf16 safetensors, fp32
## torch.save with AdamW) as tensor differences beside --tensors=never,
## -z and rsync, on loopback and at 100 Mbit/s
bench-tensors: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench_tensors.sh 256

## bench-delta: delta beside rsync on a 512 MiB checkpoint, and rates
bench-delta: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench_delta.sh 512

## bench-streams: 1 GiB pushes and pulls next to rsync and scp, loopback and
## WAN, and the rate against -j 1-16 (about 12 minutes)
bench-streams: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench.sh streams

## bench-fanout: one push to many boxes in a network-namespace lab (root):
## 1 GiB to 8 boxes over a 100 Mbit/s uplink, 1 Gbit/s box ports, to 1 box
## and to all, a box killed, a straggler (FANOUT_MB, FANOUT_BOXES and
## FANOUT_RUNS size it; with per-box sends, about 2 hours at full size)
bench-fanout: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench_fanout.sh

## bench-quick: every bench scenario at small sizes (under a minute)
bench-quick: deps
	@$(MAKE) --no-print-directory all
	FERRY_BIN=$(BINDIR) FERRY_TOOLS=$(OUT)/tests bash tests/bench/bench.sh quick

## mutate: each check in engine/, server/ and proto/ made to pass, one at a
## time (a fixed draw of MUTATE_SAMPLE, default 40): how many the unit tests
## catch; fails under MUTATE_MIN percent (95). Tens of minutes.
mutate: deps
	@$(MAKE) --no-print-directory $(UNIT)
	bash tests/mutate.sh

## swarm: bin/ferry-swarm and bin/ferry-swarm-aarch64, one box's swarm
## member (C++), linked statically against libtorrent-rasterbar built from
## Debian's source (swarm/static_lib.sh: minutes, once per machine and
## type, cached in ~/.cache/ferry-build), so that it runs on a box whatever
## its libraries (docs/SWARM.md); each .gz, the same through gzip, is what
## crosses to a box that has gzip
swarm: $(SWARM_BIN) $(SWARM_AARCH64)

# $(call swarm_link,ARCH,CXX,OBJ): the helper for ARCH. getaddrinfo and
# dlopen in a static glibc warn at link time: the helper is only ever
# given numeric addresses, and loads nothing.
define swarm_link
	@mkdir -p $(dir $@) $(OUT)
	@lt=$$(bash swarm/static_lib.sh $(1)) && \
	echo "$(2) -static -o $@ $(SWARM_SRC) ($$lt)" && \
	$(2) $(SWARM_CXXFLAGS) -static -s -o $@ $(SWARM_SRC) $(3) \
		-isystem $$lt/include $$(cat $$lt/defines) \
		$$lt/lib/libtorrent-rasterbar.a -lssl -lcrypto -lpthread -ldl \
		2>$(OUT)/swarm-link-$(1).log || \
		{ cat $(OUT)/swarm-link-$(1).log; exit 1; }
	gzip -9 -n -c $@ >$@.gz
endef

$(SWARM_BIN): $(SWARM_SRC) $(SWARM_HDR) swarm/static_lib.sh \
		$(call obj,swarm/swarm_line.c)
	$(call swarm_link,x86_64,g++,$(call obj,swarm/swarm_line.c))

$(SWARM_AARCH64): $(SWARM_SRC) $(SWARM_HDR) \
		swarm/static_lib.sh build/aarch64/swarm/swarm_line.o
	$(call swarm_link,aarch64,aarch64-linux-gnu-g++,build/aarch64/swarm/swarm_line.o)

## spike-swarm: the libtorrent spike for fan-out (docs/SWARM.md): SSL v2
## swarms of loopback boxes, then a 256 MiB bench (SPIKE_BENCH=0 skips it,
## SPIKE_MB sizes it). Not part of make test.
SPIKE_DEB := g++ pkg-config libtorrent-rasterbar-dev openssl bc
SPIKE := build/spike/swarm_spike
spike-swarm: spike-swarm-bin
	bash tests/spike/swarm_spike.sh $(SPIKE)

spike-swarm-bin:
	@sh tests/deps.sh $(SPIKE_DEB)
	@mkdir -p $(dir $(SPIKE))
	g++ -std=c++17 -O2 -Wall -Wextra -o $(SPIKE) tests/spike/swarm_spike.cpp \
		$$(pkg-config --cflags --libs libtorrent-rasterbar)

## fuzz: run each libFuzzer target for FUZZ_SECONDS s (clang-14)
# The targets (tests/fuzz/fuzz_<t>.c, seeds in tests/fuzz/corpus/<t>/) are
# built apart from the variants, with clang's libFuzzer, ASan and UBSan;
# the library sources get -fsanitize=fuzzer-no-link so that coverage
# guides the fuzzer through the decoders. New inputs go to
# build/fuzz/corpus/<t>/ and crashes to build/fuzz/crash-<t>-*: once the
# bug is fixed, copy the crash into tests/fuzz/corpus/<t>/.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang-14
FUZZ_DEB := clang-14 libclang-rt-14-dev
FUZZ_TARGETS := frame msg journal tar delta rvmsg tensor vmanifest sshcfg \
	known_hosts swarmline conductor
# The client's parsers: their targets link the client's ssh objects and
# libssh2 as well (tests/fuzz/fuzz_client.c), and the swarm's conductor
# (tests/fuzz/fuzz_conductor_lines.c).
FUZZ_CLIENT_TARGETS := sshcfg known_hosts conductor
FUZZ_CLIENT_SRC := client/sshcfg.c client/ssh.c $(wildcard client/ssh_*.c) \
	client/digest.c client/output.c client/output_summary.c $(ENGINE_SRC) \
	client/swarm.c tests/fuzz/fuzz_client.c tests/fuzz/fuzz_conductor_lines.c
FUZZ_OUT := build/fuzz
FUZZ_CFLAGS := $(BASE_CFLAGS) -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_SRC := $(COMMON_SRC) $(PROTO_SRC) tests/fuzz/fuzz_common.c \
	tests/fuzz/fuzz_archive.c tests/fuzz/fuzz_deltamsg.c \
	tests/fuzz/fuzz_pieces.c swarm/swarm_line.c
FUZZ_BINS := $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_TARGETS))
# The replay drivers and the corpus generator use the variant's compiler.
FUZZ_TEST_OBJ := $(call obj,$(COMMON_SRC) $(PROTO_SRC) \
	tests/fuzz/fuzz_common.c tests/fuzz/fuzz_archive.c \
	tests/fuzz/fuzz_deltamsg.c tests/fuzz/fuzz_pieces.c swarm/swarm_line.c)
REPLAY_BINS := $(patsubst %,$(OUT)/tests/fuzz/replay_%,$(FUZZ_TARGETS))
FUZZ_CLIENT_BINS := $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_CLIENT_TARGETS))
FUZZ_CLIENT_OBJ := $(patsubst %.c,$(FUZZ_OUT)/%.o,$(FUZZ_CLIENT_SRC))
REPLAY_CLIENT_BINS := $(patsubst %,$(OUT)/tests/fuzz/replay_%, \
	$(FUZZ_CLIENT_TARGETS))

.PHONY: fuzz-replay fuzz-corpus
# Objects made through the pattern rules below are not intermediate files
# to delete after the link: keep them for the next incremental build.
.SECONDARY: $(patsubst %.c,$(FUZZ_OUT)/%.o,$(FUZZ_LIB_SRC)) \
	$(FUZZ_CLIENT_OBJ) $(call obj,$(FUZZ_CLIENT_SRC)) \
	$(patsubst %,$(FUZZ_OUT)/tests/fuzz/fuzz_%.o,$(FUZZ_TARGETS)) \
	$(call obj,tests/fuzz/replay.c \
	$(patsubst %,tests/fuzz/fuzz_%.c,$(FUZZ_TARGETS)))

fuzz:
	@sh tests/deps.sh $(FUZZ_DEB)
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_OUT)/corpus/$$t || exit 1; \
		echo "fuzz: $$t, $(FUZZ_SECONDS) s, log $(FUZZ_OUT)/$$t.log"; \
		$(FUZZ_OUT)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_OUT)/crash-$$t- \
			$(FUZZ_OUT)/corpus/$$t tests/fuzz/corpus/$$t \
			>$(FUZZ_OUT)/$$t.log 2>&1 || \
			{ tail -n 40 $(FUZZ_OUT)/$$t.log; exit 1; }; \
		grep '^Done' $(FUZZ_OUT)/$$t.log || true; \
	done

$(FUZZ_OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/tests/fuzz/fuzz_%.o \
		$(patsubst %.c,$(FUZZ_OUT)/%.o,$(FUZZ_LIB_SRC))
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lzstd -lpthread

$(FUZZ_CLIENT_BINS): $(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/tests/fuzz/fuzz_%.o \
		$(patsubst %.c,$(FUZZ_OUT)/%.o,$(FUZZ_LIB_SRC)) $(FUZZ_CLIENT_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(CLIENT_LIBS)

## fuzz-replay: replay tests/fuzz/corpus through the targets, without clang
fuzz-replay: $(REPLAY_BINS)
	@for t in $(FUZZ_TARGETS); do \
		$(OUT)/tests/fuzz/replay_$$t tests/fuzz/corpus/$$t || exit 1; \
	done

$(OUT)/tests/fuzz/replay_%: $(call obj,tests/fuzz/replay.c) \
		$(OUT)/tests/fuzz/fuzz_%.o $(FUZZ_TEST_OBJ)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ -lzstd -lpthread

$(REPLAY_CLIENT_BINS): $(OUT)/tests/fuzz/replay_%: \
		$(call obj,tests/fuzz/replay.c) $(OUT)/tests/fuzz/fuzz_%.o \
		$(FUZZ_TEST_OBJ) $(call obj,$(FUZZ_CLIENT_SRC))
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ $(CLIENT_LIBS)

## fuzz-corpus: rewrite the seed files in tests/fuzz/corpus (wire changes)
fuzz-corpus: $(OUT)/tests/fuzz/gen_corpus
	$(OUT)/tests/fuzz/gen_corpus tests/fuzz/corpus

$(OUT)/tests/fuzz/gen_corpus: $(call obj,tests/fuzz/gen_corpus.c \
		tests/fuzz/fuzz_seed.c) $(FUZZ_TEST_OBJ)
	$(CC) $(LDFLAGS_CLIENT) -pthread -o $@ $^ -lzstd -lpthread

# Where `make install` puts things; DESTDIR for packaging. The client
# looks for ferry-agent beside itself, so both go into the same bin.
PREFIX ?= /usr/local
INSTALL_FROM ?= bin

## install: ferry and its agents, the man page and completions under PREFIX
install:
	@for f in ferry ferry-agent; do test -x $(INSTALL_FROM)/$$f || \
		{ echo "ferry: $(INSTALL_FROM)/$$f is not built (run make)"; \
		exit 1; }; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 0755 $(INSTALL_FROM)/ferry $(INSTALL_FROM)/ferry-agent \
		$(DESTDIR)$(PREFIX)/bin/
	if [ -x $(INSTALL_FROM)/ferry-agent-aarch64 ]; then \
		install -m 0755 $(INSTALL_FROM)/ferry-agent-aarch64 \
			$(DESTDIR)$(PREFIX)/bin/; fi
	for f in ferry-swarm ferry-swarm-aarch64; do \
		if [ -x $(INSTALL_FROM)/$$f ]; then install -m 0755 \
		$(INSTALL_FROM)/$$f $(INSTALL_FROM)/$$f.gz \
		$(DESTDIR)$(PREFIX)/bin/; fi; done
	install -m 0644 docs/ferry.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 docs/completion/ferry.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/ferry
	install -m 0644 docs/completion/_ferry \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ferry

## clean: remove build outputs
clean:
	rm -rf build bin

## help: list targets
help:
	@grep -h '^## ' $(MAKEFILE_LIST) | sed 's/^## /  /'

-include $(shell find build -name '*.d' 2>/dev/null)
