# spx: a plain Makefile. Targets:
#   make                 build every tool into $(O)/bin (O=build)
#   make DEVELOPER=1     the same with -Werror and stricter warnings
#   make test            unit tests, bats tests and real-client tests
#   make asan            the test suite built with ASan+UBSan (O=build-asan)
#   make memcheck        the unit tests under valgrind (leaks are errors)
#   make fuzz            libFuzzer targets with clang (O=build-fuzz)
#   make fuzz-smoke      each fuzz target for FUZZ_SECONDS (60) seconds
#   make run             install deps, build, init ./run/node1, start it
#   make bench           the benchmark suites available on this machine
#   make completions     regenerate completions/ from the verb tables
#   make ec2-model       regenerate lib/gw/ec2q_model.{c,h} from botocore's
#                        models (Debian's awscli) for scripts/ec2-actions.txt

O ?= build
CC ?= cc
PKG_CONFIG ?= pkg-config
PKGS = openssl jansson expat libmicrohttpd libcurl libisal libnbd libnl-route-3.0 \
	libnftables

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

CFLAGS ?= -O2 -g
SPX_CFLAGS = -std=c17 -D_GNU_SOURCE -pthread -Wall -Wextra -Wformat=2 \
	-Wvla -Wno-unused-parameter -fno-common -fstack-protector-strong -fPIC \
	-Ilib/core -Ilib $(PKG_CFLAGS)
ifdef DEVELOPER
SPX_CFLAGS += -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wold-style-definition
endif
LDLIBS_ALL = $(PKG_LIBS) -lm -pthread

LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(O)/obj/%.o)
TOOLS := $(sort $(notdir $(wildcard bin/spx*)))
BINS := $(TOOLS:%=$(O)/bin/%)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNITS := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))

# The nbdkit plugin that serves volumes (lib/vol/nbdkit): a shared object
# nbdkit loads, over the same library (built -fPIC for it).
PLUGIN := $(O)/lib/nbdkit-spxvol-plugin.so
# spx's own NBD server (lib/vol/nbdkit/nbdsrv.c): the same plugin served
# from an io_uring event loop; spx-vol serve runs it unless ebs.server
# says nbdkit.
NBDSRV := $(O)/lib/spx-nbd

.PHONY: all test asan memcheck fuzz fuzz-smoke run bench completions \
	clean units check-deps ec2-model
all: $(BINS) $(PLUGIN) $(NBDSRV)

# Objects depend on this file too: a change of flags rebuilds them.
$(O)/obj/%.o: %.c Makefile
	@mkdir -p $(@D)
	$(CC) $(SPX_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(O)/libspx.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

tool_objs = $(patsubst %.c,$(O)/obj/%.o,$(wildcard bin/$(1)/*.c))
# Keep the tools' objects: they are intermediate files to make.
.SECONDARY:
.SECONDEXPANSION:
$(O)/bin/%: $$(call tool_objs,$$*) $(O)/libspx.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(O)/libspx.a $(LDLIBS_ALL)

$(PLUGIN): $(O)/obj/lib/vol/nbdkit/spxvol.o $(O)/libspx.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $< $(O)/libspx.a $(LDLIBS_ALL)

$(NBDSRV): $(O)/obj/lib/vol/nbdkit/nbdsrv.o $(O)/obj/lib/vol/nbdkit/spxvol.o \
		$(O)/libspx.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(O)/libspx.a \
		$(LDLIBS_ALL) -luring

$(O)/tests/%: $(O)/obj/tests/unit/%.o $(O)/libspx.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(O)/libspx.a $(LDLIBS_ALL)

units: $(UNITS)

test: all units
	@tests/run.sh $(O)

ASAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
# Left out under the sanitizers, to keep CI within its time: benchmarks
# (timings mean nothing under ASan; 6 min in CI), the cloud-init guest
# boot (7 min of TCG; the IMDS and seed code it drives is unit-tested and
# fuzzed under ASan) and the examples (2 min: the launch, attach, SSH,
# teardown and spread group they run are what attach.bats and
# placement.bats run under ASan). All run in the plain suite.
ASAN_SKIP ?= bats/bench-block.bats clients/cloud-init.bats bats/examples.bats
asan:
	$(MAKE) O=build-asan CFLAGS="$(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" \
		all units
	@rm -rf build-asan/reports && mkdir -p build-asan/reports
	SPX_TEST_SKIP="$(ASAN_SKIP) $(SPX_TEST_SKIP)" \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_exe_name=1:log_path=$(CURDIR)/build-asan/reports/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_exe_name=1:log_path=$(CURDIR)/build-asan/reports/ubsan \
		tests/run.sh build-asan
	@# Daemons (spx-gw) report into files, not into a test's output:
	@# any report is a failure. A file is named by its program and pid.
	@# An empty one holds no report (the runtime opens the file before
	@# it writes, so a process killed in between leaves one): it is
	@# named, not counted.
	@bad=0; for f in build-asan/reports/*; do \
		[ -e "$$f" ] || continue; \
		if [ ! -s "$$f" ]; then echo "empty sanitizer log: $$f"; continue; fi; \
		echo "sanitizer report: $$f ($$(wc -c <"$$f") bytes)"; \
		head -60 "$$f"; bad=1; \
	done; exit $$bad

memcheck: units
	@tests/run.sh --memcheck $(O)

# Fuzz targets: the library rebuilt by clang with coverage, one binary per
# tests/fuzz/fuzz_*.c.
FUZZ_O = build-fuzz
FUZZ_FLAGS = -O1 -g -fsanitize=fuzzer-no-link,address,undefined
fuzz:
	$(MAKE) O=$(FUZZ_O) CC=clang CFLAGS="$(FUZZ_FLAGS)" $(FUZZ_O)/libspx.a
	@mkdir -p $(FUZZ_O)/fuzz
	@set -e; for f in $(FUZZ_SRC); do \
		n=$$(basename $$f .c); \
		echo "clang $$f -> $(FUZZ_O)/fuzz/$$n"; \
		clang $(SPX_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined \
			-o $(FUZZ_O)/fuzz/$$n $$f $(FUZZ_O)/libspx.a $(LDLIBS_ALL); \
	done

FUZZ_SECONDS ?= 60
fuzz-smoke: fuzz
	@tests/fuzz/smoke.sh $(FUZZ_O)/fuzz $(FUZZ_SECONDS)

RUN_ROOT ?= $(CURDIR)/run/node1
run:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory all
	@scripts/run.sh $(O) $(RUN_ROOT)

bench: all
	@scripts/bench.sh $(O)

completions: all
	@scripts/gen-completions.sh $(O)/bin

# The generated tables are committed: a build needs no awscli.
ec2-model:
	python3 scripts/gen-ec2.py

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(UNIT_SRC:tests/unit/%.c=$(O)/obj/tests/unit/%.d)
-include $(patsubst %.c,$(O)/obj/%.d,$(wildcard bin/*/*.c))
-include $(O)/obj/lib/vol/nbdkit/spxvol.d $(O)/obj/lib/vol/nbdkit/nbdsrv.d
