# moescope - see README.md and the manual (man assets/moescope.1).  `make deps run` on a fresh
# Debian machine, `make check` for tests.
#
#   make            ./moescope (release build, objects under build/rel)
#   make check      AddressSanitizer + UBSan build under build/asan, then every test
#   make bench      benchmarks, side by side with numpy/scipy, as ratios
#   make moescope-mpi   ./moescope-mpi, landscape and study over MPI (needs mpicc)
#   make run        the TUI on the bundled sample checkpoints (exports in build/exports)
#   make samples    regenerate sample-checkpoints/ (byte-identical for the same seeds)
#   make fuzz       libFuzzer harnesses for a bounded time (clang)
#   make mutants    mutation check: small deliberate bugs, each must fail a test
#   make install    PREFIX=/usr/local DESTDIR=: the binary, fonts and themes, the manual
#                   (man moescope) and bash completion; make install-docs: those two alone

.DEFAULT_GOAL := all
# every CPU unless -j says otherwise: a fresh `make check` builds two trees
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
CC      ?= cc
PYTHON  ?= /usr/bin/python3
PREFIX  ?= /usr/local
DESTDIR ?=
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

PKGS        := openblas libcjson libpng
PKG_CFLAGS  := $(shell pkg-config --cflags $(PKGS) ncursesw 2>/dev/null)
PKG_LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CURSES_LIBS := $(shell pkg-config --libs ncursesw 2>/dev/null)

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
CSTD     := -std=gnu11
OPT      ?= -O2 -march=x86-64-v2
CPPFLAGS += -Iinclude
LDLIBS   := $(PKG_LIBS) $(CURSES_LIBS) -lpthread -lm

# the sanitizers' reports need functions and lines, which -g1 gives (full -g's
# types and variables cost a sixth of the sanitizer build's compile time)
SAN_FLAGS := -O1 -g1 -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer

# The source tree, by area (each folder one concern; include/ mirrors it):
#   src/core      errors, allocation limits, progress, RNG, BLAS threads
#   src/model     the MoE layer, its kernels, symmetry actions, the evaluator,
#                 the small trainer of the samples (no file I/O)
#   src/io        safetensors, checkpoint arguments, model families, codecs,
#                 loading and saving a layer, atomic files, provenance
#   src/align     expert costs, the assignment solver, weight matching, align
#   src/landscape every expert order, curves, ranks, its reports
#   src/network   a GPT-2 network around MoE blocks, its loss as an objective
#   src/analysis  diagnose, study, lesson, the memory budget, the routing geometry
#   src/plot      PNG/SVG figures and the bitmap font
#   src/explore   the explorer's background workers (no curses)
#   src/cli       main.c and the subcommands
#   src/mpi       moescope-mpi's own files (compiled with MPI's headers)
#   ui/           the ncurses explorer: the only code that sees curses
# Each folder uses only those listed before it (tests/codebase/test_layering.py).
# Three archives, one direction of dependence: ui -> cli -> library.
#   libmoescope.a      every src/ folder but cli/ and mpi/ (no curses, no MPI)
#   libmoescope_cli.a  src/cli/ without main.c
#   libmoescope_ui.a   ui/
# src/cli/main.c (the binary's entry) joins them. src/ is compiled without
# -Iui, so a src/ file cannot include a ui/ header; tests/codebase/test_boundaries.sh
# checks it.
MAIN_SRC := src/cli/main.c
CLI_SRC  := $(filter-out $(MAIN_SRC),$(wildcard src/cli/*.c))
# the plain binary needs no MPI to build or run
MPI_SRC  := $(wildcard src/mpi/*.c)
LIB_SRC  := $(filter-out src/cli/% src/mpi/%,$(wildcard src/*/*.c))
UI_SRC   := $(wildcard ui/*.c)
TEST_SRC := $(wildcard tests/*/test_*.c)
# -Iui for everything but the library (ui/ itself, main.c, the UI's tests)
ui_inc = $(if $(filter src/%,$(1)),$(if $(filter $(MAIN_SRC),$(1)),-Iui),-Iui)

# $(1) = build dir, $(2) = extra CFLAGS
define BUILD_RULES
$(1)/libmoescope.a: $(patsubst %.c,$(1)/%.o,$(LIB_SRC))
	@rm -f $$@
	@echo "AR $$@" && ar rcs $$@ $$^
$(1)/libmoescope_cli.a: $(patsubst %.c,$(1)/%.o,$(CLI_SRC))
	@rm -f $$@
	@echo "AR $$@" && ar rcs $$@ $$^
$(1)/libmoescope_ui.a: $(patsubst %.c,$(1)/%.o,$(UI_SRC))
	@rm -f $$@
	@echo "AR $$@" && ar rcs $$@ $$^
$(1)/moescope: $(1)/src/cli/main.o $(1)/libmoescope_ui.a $(1)/libmoescope_cli.a $(1)/libmoescope.a
	$$(CC) $(2) -o $$@.tmp $$^ $$(LDLIBS) && mv -f $$@.tmp $$@
$(1)/moescope-mpi: $(patsubst %.c,$(1)/%.o,$(MPI_SRC)) $(1)/libmoescope_cli.a $(1)/libmoescope.a
	$$(CC) $(2) -o $$@.tmp $$^ $$(MPI_LIBS) $$(LDLIBS) && mv -f $$@.tmp $$@
$(1)/tests/%: $(1)/tests/%.o $(1)/libmoescope_ui.a $(1)/libmoescope_cli.a $(1)/libmoescope.a
	$$(CC) $(2) -o $$@ $$^ $$(LDLIBS)
$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CSTD) $(2) $$(WARN) $$(CPPFLAGS) $$(call ui_inc,$$<) $$(PKG_CFLAGS) -MMD -MP -c -o $$@ $$<
endef

REL  := build/rel
ASAN := build/asan

# MPI (OpenMPI's mpicc names its flags); empty when MPI is not installed
MPICC      ?= mpicc
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell $(MPICC) --showme:link 2>/dev/null)
$(patsubst %.c,$(REL)/%.o,$(MPI_SRC)) $(patsubst %.c,$(ASAN)/%.o,$(MPI_SRC)): CPPFLAGS += $(MPI_CFLAGS)
# make check and make test build moescope-mpi too when MPI is there
MPI_BIN = $(if $(MPI_LIBS),$(1)/moescope-mpi)

# The version reports carry: git describe of this tree, or (a release tarball
# without .git) empty, and then src/io/provenance.c uses MS_VERSION_FALLBACK.
# build/version.txt changes only when the description does, so only
# provenance.o is rebuilt.
MS_GIT_VERSION := $(if $(wildcard $(CURDIR)/.git),$(shell git -C $(CURDIR) describe --tags --always --dirty 2>/dev/null))
$(shell mkdir -p build && v='$(MS_GIT_VERSION)'; \
    [ -f build/version.txt ] && [ "$$(cat build/version.txt)" = "$$v" ] || printf '%s' "$$v" > build/version.txt)
$(REL)/src/io/provenance.o $(ASAN)/src/io/provenance.o: build/version.txt
$(REL)/src/io/provenance.o $(ASAN)/src/io/provenance.o: CPPFLAGS += -DMS_GIT_VERSION='"$(MS_GIT_VERSION)"'
# fonts are looked up beside the executable and under the install prefix (never the
# current directory): the prefix is compiled in
$(REL)/src/plot/bitmap_font.o $(ASAN)/src/plot/bitmap_font.o: CPPFLAGS += -DMS_DATADIR='"$(PREFIX)/share/moescope"'
$(eval $(call BUILD_RULES,$(REL),$(OPT) -g))
$(eval $(call BUILD_RULES,$(ASAN),$(SAN_FLAGS)))
# UBSan's pointer-overflow and alignment checks on every vector load of the three
# landscape kernels (AVX-512, AVX2, plain) more than double that file's compile time (the
# longest of the build: 111 s to 49 s of CPU); its loads are unaligned intrinsics ASan
# bounds-checks anyway
$(ASAN)/src/landscape/landscape_kernel.o: CPPFLAGS += -fno-sanitize=pointer-overflow,alignment

.PHONY: all deps run check test bench samples fuzz mutants install install-docs clean version moescope-mpi
.SECONDARY:

all: moescope

moescope: $(REL)/moescope
	cp $< $@.tmp && mv -f $@.tmp $@

moescope-mpi:
	@[ -n "$(MPI_LIBS)" ] || { echo "moescope-mpi needs MPI: $(MPICC) not found (make deps installs OpenMPI)"; exit 1; }
	@$(MAKE) --no-print-directory $(REL)/moescope-mpi
	cp $(REL)/moescope-mpi $@.tmp && mv -f $@.tmp $@

REL_TESTS  := $(patsubst tests/%.c,$(REL)/tests/%,$(TEST_SRC))
ASAN_TESTS := $(patsubst tests/%.c,$(ASAN)/tests/%,$(TEST_SRC))
# the C tests share tests/lib (testlib.h, lap_reference.h)
$(patsubst %.c,$(REL)/%.o,$(TEST_SRC)) $(patsubst %.c,$(ASAN)/%.o,$(TEST_SRC)): CPPFLAGS += -Itests/lib

# Debian packages for build, tests and benchmarks (python3-torch and fortunes: only
# to remake the GPT samples and for the network benchmark). Root runs apt-get directly.
DEB_PACKAGES := build-essential pkg-config libopenblas-dev libcjson-dev libpng-dev \
    libncurses-dev python3 python3-numpy python3-scipy python3-sklearn tmux clang \
    libclang-rt-dev universal-ctags time openmpi-bin libopenmpi-dev strace python3-torch fortunes \
    groff-base man-db
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEB_PACKAGES)

SAMPLE_A := sample-checkpoints/teacher4/seed1.safetensors
SAMPLE_B := sample-checkpoints/teacher4/seed2.safetensors
SAMPLE_E := sample-checkpoints/teacher4/eval.safetensors
# where the explorer's p, e and x write under make run (kept by make clean)
RUN_OUT  ?= build/exports
run: moescope
	@if [ -f $(SAMPLE_A) ]; then ./moescope $(SAMPLE_A) $(SAMPLE_B) --eval $(SAMPLE_E) --out-dir $(RUN_OUT); \
	else echo "no sample checkpoints yet"; fi

# Every test, under AddressSanitizer + UBSan. The last line is "N passed, N failed".
# MOESCOPE_REL, MOESCOPE_MPI_REL: the release build, for the few data-heavy parts
# (retraining the samples, 3.6 M orders, n = 1024 experts) where the same code
# runs under the sanitizers on smaller inputs.
check: $(ASAN)/moescope $(ASAN_TESTS) $(call MPI_BIN,$(ASAN)) $(REL)/moescope $(call MPI_BIN,$(REL))
	@MOESCOPE=$(ASAN)/moescope MOESCOPE_REL=$(REL)/moescope MOESCOPE_MPI=$(call MPI_BIN,$(ASAN)) \
	    MOESCOPE_MPI_REL=$(call MPI_BIN,$(REL)) TESTBIN=$(ASAN)/tests PYTHON=$(PYTHON) bash tests/run.sh

# The same tests against the release build (faster, no sanitizers).
test: $(REL)/moescope $(REL_TESTS) $(call MPI_BIN,$(REL))
	@MOESCOPE=$(REL)/moescope MOESCOPE_MPI=$(call MPI_BIN,$(REL)) TESTBIN=$(REL)/tests PYTHON=$(PYTHON) bash tests/run.sh

bench: $(REL)/moescope $(call MPI_BIN,$(REL))
	@MOESCOPE=$(REL)/moescope MOESCOPE_MPI=$(call MPI_BIN,$(REL)) PYTHON=$(PYTHON) bash tests/bench/run.sh

samples: $(REL)/moescope
	@MOESCOPE=$(REL)/moescope PYTHON=$(PYTHON) bash sample-checkpoints/make_samples.sh

fuzz:
	@bash tests/fuzz/run.sh

# tests/mutants.py: each listed mutant in a scratch copy, rebuilt, its tests run
mutants:
	@$(PYTHON) tests/mutants.py $(MUTANTS)

install: moescope install-docs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/moescope
	install -m 755 moescope $(DESTDIR)$(PREFIX)/bin/moescope
	if [ -f moescope-mpi ]; then install -m 755 moescope-mpi $(DESTDIR)$(PREFIX)/bin/moescope-mpi; \
	    ln -sf moescope.1 $(DESTDIR)$(MANDIR)/man1/moescope-mpi.1; \
	    ln -sf moescope $(DESTDIR)$(BASHCOMPDIR)/moescope-mpi; fi
	cp -r assets/fonts assets/themes $(DESTDIR)$(PREFIX)/share/moescope/

# the manual (man moescope) and the bash completion, as htop and ncdu ship them; no build
install-docs:
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 assets/moescope.1 $(DESTDIR)$(MANDIR)/man1/moescope.1
	install -m 644 assets/moescope.bash $(DESTDIR)$(BASHCOMPDIR)/moescope

# the version string the binary reports (git describe, else the fallback)
version:
	@v='$(MS_GIT_VERSION)'; [ -n "$$v" ] || v=$$(sed -n 's/^#define MS_VERSION_FALLBACK "\(.*\)"/\1/p' include/io/provenance.h); echo "$$v"

# everything built; the explorer's exports of make run (build/exports) stay
clean:
	@if [ -d build ]; then find build -mindepth 1 -maxdepth 1 ! -name exports -exec rm -rf {} +; fi
	rm -f moescope moescope-mpi

-include $(shell find build -name '*.d' 2>/dev/null)
