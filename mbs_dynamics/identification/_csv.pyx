# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Decimal CSV fields to doubles, compiled: the map step's parser of a chunk of a CSV log
(:mod:`.chunked`), correctly rounded, so its values equal :func:`numpy.loadtxt`'s bit for bit.

A field ``[blanks][+|-]digits[.digits][(e|E)[+|-]digits][blanks]`` (blanks: space and tab; a line
may end in CR LF) holds the decimal M·10^e, M an integer of at most 19
significant digits (M < 2⁶⁴). Its double is computed exactly in 128-bit integers and rounded
once, to nearest-even, as IEEE 754 requires of a correctly rounded conversion (Clinger, "How to
read floating point numbers accurately", 1990, §3: the exact quotient's bits and a sticky bit):

* 0 ≤ e ≤ 19: M·10^e < 2¹²⁸ exactly; its conversion to double rounds once.
* −19 ≤ e < 0: q = ⌊M·2^s / 10^−e⌋ with M·2^s of 120 bits, so q has at least 56; a nonzero
  remainder sets q's lowest bit (sticky), so rounding q to 53 bits rounds the exact quotient;
  the scaling by 2^−s is exact (no result of this range is subnormal).

Other decimals (more digits, larger exponents) go to the C library's ``strtod`` (correctly
rounded in glibc) on a NUL-terminated copy, accepted only when it reads the whole field (a
locale whose decimal point is not "." reads less). Anything else — an empty or missing field,
text, ``nan``, a comment, quotes, hexadecimal — stops the parse and returns the row: the caller
then reads the chunk with :func:`numpy.loadtxt` and names the bad field.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memchr

cnp.import_array()

cdef extern from *:
    """
    #include <string.h>
    /* 2^-s for 0 <= s <= 1000 (a normal double) */
    static inline double mbs_pow2m(int s) {
        unsigned long long u = (unsigned long long)(1023 - s) << 52;
        double x;
        memcpy(&x, &u, 8);
        return x;
    }
    /* m 10^e (0 <= e <= 19) rounded once */
    static inline double mbs_exact_mul(unsigned long long m, unsigned long long p) {
        unsigned long long r;
        if (!__builtin_mul_overflow(m, p, &r)) return (double)r;
        return (double)((unsigned __int128)m * p);
    }
    /* m / d (m > 0, 10 <= d < 2^64) rounded once: q = floor(m 2^s / d) in (2^62, 2^64),
       a nonzero remainder sets its last bit (sticky), the conversion rounds q to 53 bits and
       the scaling by 2^-s is exact */
    static inline double mbs_exact_div(unsigned long long m, unsigned long long d) {
        int s = 63 + (64 - __builtin_clzll(d)) - (64 - __builtin_clzll(m));
        unsigned __int128 n = (unsigned __int128)m << s;
        unsigned long long q, r;
    #if defined(__x86_64__)
        unsigned long long hi = (unsigned long long)(n >> 64), lo = (unsigned long long)n;
        __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d) : "cc");
    #else
        q = (unsigned long long)(n / d);
        r = (unsigned long long)(n - (unsigned __int128)q * d);
    #endif
        q |= (r != 0);
        return (double)q * mbs_pow2m(s);
    }
    """
    double mbs_exact_mul(unsigned long long m, unsigned long long p) nogil
    double mbs_exact_div(unsigned long long m, unsigned long long d) nogil

cdef uint64_t P10[20]
cdef double F10[23]
cdef int _i
P10[0] = 1
F10[0] = 1.0
for _i in range(1, 20):
    P10[_i] = P10[_i - 1] * 10
for _i in range(1, 23):
    F10[_i] = F10[_i - 1] * 10.0  # exact: 10^22 < 2^53 · 2^22


cdef inline bint blank(unsigned char c) noexcept nogil:
    return c == 32 or c == 9


cdef inline bint stop(const unsigned char* p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """A field ends at i: the text's end, a comma, a line feed, or CR LF."""
    return (i == n or p[i] == 44 or p[i] == 10
            or (p[i] == 13 and (i + 1 == n or p[i + 1] == 10)))


cdef Py_ssize_t field(const unsigned char* p, Py_ssize_t i, Py_ssize_t n,
                      double* out) noexcept nogil:
    """The decimal field starting at p[i] into out; the position of its end (:func:`stop`), or
    -1 when it is not a plain decimal (see the module docstring)."""
    cdef Py_ssize_t k, j, q
    cdef bint neg = False, digits = False, slow = False, frac = False
    cdef uint64_t m = 0
    cdef int e = 0, ex = 0, exs = 1
    cdef unsigned char c
    cdef double v
    cdef char buf[64]
    cdef char* end
    while i < n and blank(p[i]):
        i += 1
    k = i
    if i < n and (p[i] == 43 or p[i] == 45):
        neg = p[i] == 45
        i += 1
    while i < n:  # the digits, with at most one decimal point among them
        c = p[i] - 48
        if c > 9:
            if p[i] == 46 and not frac:
                frac = True
                i += 1
                continue
            break
        digits = True
        if m < 1000000000000000000ULL:
            m = m * 10 + c
            e -= frac
        elif c:
            slow = True
        elif not frac:
            e += 1
        i += 1
    if not digits:
        return -1
    if i < n and (p[i] == 101 or p[i] == 69):
        i += 1
        if i < n and (p[i] == 43 or p[i] == 45):
            exs = -1 if p[i] == 45 else 1
            i += 1
        if i == n or not (48 <= p[i] <= 57):
            return -1
        while i < n and 48 <= p[i] <= 57:
            if ex < 100000:
                ex = ex * 10 + (p[i] - 48)
            i += 1
        e += exs * ex
    q = i
    while i < n and blank(p[i]):
        i += 1
    if not stop(p, i, n):
        return -1
    if not slow:
        if m == 0:
            out[0] = -0.0 if neg else 0.0
            return i
        if m < 9007199254740992ULL and -22 <= e <= 22:  # Clinger's fast path: one rounding
            v = <double> m
            v = v * F10[e] if e >= 0 else v / F10[-e]
        elif 0 <= e <= 19:
            v = mbs_exact_mul(m, P10[e])
        elif -19 <= e < 0:
            v = mbs_exact_div(m, P10[-e])
        else:
            slow = True
        if not slow:
            out[0] = -v if neg else v
            return i
    if q - k >= 63:
        return -1
    for j in range(q - k):
        buf[j] = <char> p[k + j]
    buf[q - k] = 0
    v = strtod(buf, &end)
    if end != buf + (q - k):
        return -1
    out[0] = v
    return i


cdef Py_ssize_t lines(const unsigned char* p, Py_ssize_t n, Py_ssize_t rows,
                      const Py_ssize_t* where, Py_ssize_t ncol, double* out,
                      Py_ssize_t width) noexcept nogil:
    """:func:`parse` on raw pointers (out row-major, ``width`` columns)."""
    cdef Py_ssize_t pos = 0, r, c, w
    for r in range(rows):
        if pos >= n:
            return r
        for c in range(ncol):
            w = where[c]
            if w >= 0:
                pos = field(p, pos, n, out + r * width + w)
                if pos < 0:
                    return r
            else:
                while not stop(p, pos, n):
                    pos += 1
            if c + 1 < ncol:
                if pos == n or p[pos] != 44:  # a short line
                    return r
                pos += 1
        while pos < n and p[pos] != 10:  # the columns after the last wanted one
            pos += 1
        pos += 1
    return -1


def parse(const unsigned char[::1] text, Py_ssize_t rows, const Py_ssize_t[::1] where,
          double[:, ::1] out):
    """Parse the first ``rows`` lines of ``text`` (lines end with b"\\n"; the last one may not).

    Args:
        text: the bytes of the lines.
        rows: lines to read.
        where: for each file column c up to the last one wanted, its column in ``out`` or −1.
        out: (≥ rows, number of wanted columns) doubles, written.
    Returns:
        −1 when every line was read, else the first line (from 0) that could not be (a missing,
        empty or non-decimal field, or the text ends early).
    Raises:
        ValueError: ``out`` is too small for ``rows`` and ``where``.
    """
    cdef Py_ssize_t n = text.shape[0], ncol = where.shape[0], r
    if rows < 0 or out.shape[0] < rows or ncol == 0 or max(where) >= out.shape[1]:
        raise ValueError("out has too few rows or columns")
    if rows == 0:
        return -1
    cdef const unsigned char* p = &text[0] if n else NULL
    with nogil:
        r = lines(p, n, rows, &where[0], ncol, &out[0, 0], out.shape[1])
    return r


def line_marks(const unsigned char[::1] block, Py_ssize_t offset, Py_ssize_t rows,
               Py_ssize_t start, Py_ssize_t stride):
    """One block of a CSV's data lines in :func:`~.chunked.scan`'s single pass: the offsets of
    the lines whose row number is a multiple of ``stride``.

    Args:
        block: the file's bytes at ``offset``.
        rows: lines ended before the block.
        start: file offset where the current (unended) line starts.
        stride: every stride-th row is marked.
    Returns:
        (marks, rows, start): the file offsets of the marked rows that end in this block, and
        ``rows`` and ``start`` after it.
    """
    cdef Py_ssize_t n = block.shape[0], i = 0, j
    cdef const unsigned char* p = &block[0] if n else NULL
    cdef const unsigned char* q
    if stride < 1:
        raise ValueError("stride must be positive")
    marks = []
    while i < n:
        q = <const unsigned char*> memchr(p + i, 10, n - i)
        if q == NULL:
            break
        j = q - p
        if rows % stride == 0:
            marks.append(start)
        rows += 1
        start = offset + j + 1
        i = j + 1
    return marks, rows, start
