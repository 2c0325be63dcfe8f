/* moeplan fuzz targets: one entry point per loader, shared by the libFuzzer
 * programs (clang -fsanitize=fuzzer, built by tests/fuzz/build.sh) and by
 * the replay program (any compiler), which runs every corpus and regression
 * file through the same entry points in the normal test suite.
 *
 * The loaders take paths, so each input is written to a file in a private
 * temporary folder laid out like the source tree:
 *     DIR/plans/in.EXT          the input
 *     DIR/plans/models  -> SOURCE/plans/models
 *     DIR/plans/traces  -> SOURCE/plans/traces
 *     DIR/hardware      -> SOURCE/hardware
 * so that a scenario's relative paths (models/x.yaml, ../hardware/y.yaml)
 * resolve as they do for the shipped presets.
 *
 * Besides crashes, leaks and undefined behaviour, each target checks the
 * loader's contract (include/moeplan/loader.h) and aborts when it is broken:
 * a failure returns MP_EINVAL, MP_EIO or MP_ENOMEM, says why in at least
 * one diagnostic, and leaves the output untouched; a success fills shapes
 * within the documented maximums (include/moeplan/traffic.h).
 */
#ifndef MOEPLAN_FUZZ_H
#define MOEPLAN_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/diag.h"

/* The libFuzzer entry point (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The targets. Each returns 0 (libFuzzer's convention: keep the input). */
int fuzz_model(const uint8_t *data, size_t size);
int fuzz_hardware(const uint8_t *data, size_t size);
int fuzz_scenario(const uint8_t *data, size_t size);
int fuzz_traffic(const uint8_t *data, size_t size);
/* The first byte picks the file name's extension (.csv, .json, .yaml or
 * none, which makes the loader sniff the content); the rest is the file. */
/* torch.save archives: first byte bit 0 = map (else loads), bits 1-2 = GPUs. */
int fuzz_torch(const uint8_t *data, size_t size);
int fuzz_loads(const uint8_t *data, size_t size);
/* The first byte picks the phase (none, decode, prefill) and the GPU
 * count passed (0 = "the file says", 1, 2, 8); the rest is the file. */
int fuzz_map(const uint8_t *data, size_t size);
/* mp_parse_quantity in memory: the first byte picks the kind (mod 6). */
int fuzz_quantity(const uint8_t *data, size_t size);

/* Write data to DIR/plans/in<ext> (ext e.g. ".yaml", or "") and return
 * its path (static storage, valid until the next call). Aborts when the
 * temporary folder cannot be made or written: that is no finding. */
const char *fuzz_write_input(const uint8_t *data, size_t size, const char *ext);

/* Check the failure half of the loader contract (see above): aborts with
 * a message naming the broken rule. size is the input's size in bytes. */
void fuzz_check_failure(int rc, const struct mp_diags *diags, size_t size);

/* Set in a replay child that runs under the memory bound (replay.c): a
 * loader's MP_ENOMEM there means it needed more than the bound, and
 * fuzz_check_failure aborts on it. */
extern bool fuzz_bounded;

/* The address space a loader may add while reading an input of `size`
 * bytes (the replay's bound): 16 MiB (the libraries' fixed costs and a
 * scenario's presets) plus 64 bytes per input byte. Over the committed
 * corpus the largest growth measured was 0.5 MiB (tests/fuzz/README.md,
 * MOEPLAN_FUZZ_MEASURE=1). */
unsigned long long fuzz_memory_budget(size_t size);

/* Abort with a message when cond is false (kept under NDEBUG). */
#define FUZZ_CHECK(cond) \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))
void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));

#endif
