"""Compilation of the hot loops.

Every recursive pass is one function over plain arrays, compiled by numba with
an on-disk cache (so a node pays the compile once per installation, not at its
first control cycle) and without the GIL (so several states can be linearized
on several cores).  Set NUMBA_DISABLE_JIT=1 to step through them in Python.
"""

from numba import njit


def kernel(function=None, *, inline: bool = False):
    """Compile ``function`` in nopython mode: cached, GIL-free, numpy error model.

    inline=True inlines it into its callers at numba-IR level: for the small 6D
    operations, the call overhead otherwise rivals their 36 multiply-adds.
    """
    def compile_(f):
        return njit(cache=True, nogil=True, error_model="numpy", inline="always" if inline else "never")(f)
    return compile_ if function is None else compile_(function)
