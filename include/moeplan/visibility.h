/* moeplan: which functions the shared library exports.
 *
 * The library is compiled with -fvisibility=hidden (src/meson.build): a
 * function is part of libmoeplan.so's ABI only when its declaration in
 * include/moeplan/ starts with MP_EXPORT. Every public function needs it:
 *
 *     MP_EXPORT int mp_place(const struct mp_loads *loads, ...);
 *
 * The layering test (tests/layering.py, `meson test layering`) fails when
 * a function declared in include/moeplan/ is missing from `nm -D` of the
 * shared library (a forgotten MP_EXPORT) or when the library exports a
 * symbol that no public header declares. Private helpers (pl_*, ld_*, the
 * CLI's, the plot kit's svg.h and plots.h, which are not installed) stay
 * unmarked and hidden; the CLI and the tests link the static archive, so
 * they still reach them.
 */
#ifndef MOEPLAN_VISIBILITY_H
#define MOEPLAN_VISIBILITY_H

#if defined(__GNUC__) || defined(__clang__)
#define MP_EXPORT __attribute__((visibility("default")))
#else
#define MP_EXPORT
#endif

#endif
