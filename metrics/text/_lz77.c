/* The compression distance's phrase count in C: d(S -> T) = LZ77(S + sep + T) - LZ77(S + sep).
 *
 * Why C: on texts of a few hundred characters the suffix array costs a few microseconds, while the Python
 * path spent about a hundred on array conversions, an OpenMP team and a loop over phrases. Everything here
 * runs in one call per pair (or one call per batch of pairs), on the str objects' own code points.
 *
 * How (all linear in the length of S + sep + T):
 *   1. symbols: every code point is replaced by its rank of first appearance (1, 2, ...), sep by one more,
 *      and a sentinel 0 is appended. Any total order of the symbols gives a valid suffix array for what
 *      follows, so the ranks need no sorting.
 *   2. the suffix array by induced sorting (SA-IS: Nong, Zhang & Chan, "Two efficient algorithms for linear
 *      time suffix array construction", 2011).
 *   3. the phrases of T (Kaerkkaeinen, Kempa & Puglisi, "Linear time Lempel-Ziv factorization: simple, fast,
 *      small", 2013): among the suffixes starting before i, the one sharing the longest prefix with suffix i
 *      is the nearest one before or after i in suffix-array order, so each phrase compares i with two
 *      candidates only; the comparisons never run further than the phrase plus one symbol.
 * Phrases of S + sep are never counted: none can run across sep (it occurs once), so the factorization of
 * S + sep + T starts with that of S + sep, and the phrases of T start right after sep.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Bumped whenever results or the interface change: Python refuses a stale build (an editable install whose
 * extension was compiled from older source) and takes the pure-Python path instead. */
#define LZ77_VERSION 1

typedef int32_t idx;

/* From this many symbols on, the GIL is released while the distance is computed: other threads run meanwhile,
 * and below it the release costs more than it frees. */
#define RELEASE_GIL_FROM 16384
/* The largest S + sep + T + sentinel this code indexes with 32-bit integers. */
#define MAX_SYMBOLS ((Py_ssize_t)INT32_MAX - 8)
/* Texts up to this many symbols try the hash chains first, with this many steps per symbol at most. */
#define CHAINS_UP_TO 8192
#define CHAIN_BUDGET_PER_SYMBOL 8

/* ---- 1. symbols ------------------------------------------------------------------------------------------ */

/* Code point -> rank of first appearance, 0 meaning not seen yet. A direct table when it is small next to the
 * text, else an open-addressing hash table at most half full. */
typedef struct {
    idx *table;      /* indexed by code point, or NULL */
    uint32_t *keys;  /* hash slots, EMPTY_KEY when free */
    idx *ranks;
    uint32_t mask;
    idx distinct;
} ranker;

#define EMPTY_KEY UINT32_MAX

static inline idx rank_of(ranker *r, uint32_t c) {
    if (r->table != NULL) {
        idx rank = r->table[c];
        if (rank == 0) rank = r->table[c] = ++r->distinct;
        return rank;
    }
    uint32_t slot = (c * 2654435761u) & r->mask;
    for (;;) {
        uint32_t key = r->keys[slot];
        if (key == c) return r->ranks[slot];
        if (key == EMPTY_KEY) {
            r->keys[slot] = c;
            return r->ranks[slot] = ++r->distinct;
        }
        slot = (slot + 1) & r->mask;
    }
}

static int ranker_init(ranker *r, Py_UCS4 max_char, Py_ssize_t symbols) {
    memset(r, 0, sizeof(*r));
    if ((Py_ssize_t)max_char < 4 * symbols || max_char < 4096) {
        r->table = PyMem_RawCalloc((size_t)max_char + 1, sizeof(idx));
        return r->table != NULL;
    }
    size_t capacity = 64;
    while (capacity < 2 * (size_t)symbols) capacity *= 2;
    r->keys = PyMem_RawMalloc(capacity * sizeof(uint32_t));
    r->ranks = PyMem_RawMalloc(capacity * sizeof(idx));
    if (r->keys == NULL || r->ranks == NULL) return 0;
    memset(r->keys, 0xFF, capacity * sizeof(uint32_t));
    r->mask = (uint32_t)(capacity - 1);
    return 1;
}

static void ranker_free(ranker *r) {
    PyMem_RawFree(r->table);
    PyMem_RawFree(r->keys);
    PyMem_RawFree(r->ranks);
}

/* One text's code points as ranks, read in its own storage width. */
static void rank_text(ranker *r, int kind, const void *data, Py_ssize_t length, idx *out) {
    Py_ssize_t i;
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        for (i = 0; i < length; i++) out[i] = rank_of(r, ((const Py_UCS1 *)data)[i]);
        break;
    case PyUnicode_2BYTE_KIND:
        for (i = 0; i < length; i++) out[i] = rank_of(r, ((const Py_UCS2 *)data)[i]);
        break;
    default:
        for (i = 0; i < length; i++) out[i] = rank_of(r, ((const Py_UCS4 *)data)[i]);
        break;
    }
}

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} text;

static text text_of(PyObject *s) {
    text t = {PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s)};
    return t;
}

/* ---- 2. suffix array by induced sorting -------------------------------------------------------------------
 * s[0..n-1] over symbols 0..k-1, with s[n-1] == 0 the only 0 (the sentinel). The top level reads s as bytes
 * when k <= 256 (most texts): the passes jump around s, and a quarter of the memory keeps more of it in cache;
 * deeper levels (the reduced strings) are 32-bit. The S/L types are bits for the same reason: one level's
 * n bits, then the next level's. count and bucket hold max(k, n/2 + 2) entries each, shared by all levels (a
 * level counts again after its recursion returns). */

#if defined(__GNUC__)
#define SPECIALIZE inline __attribute__((always_inline))
#else
#define SPECIALIZE inline
#endif

/* The functions taking `wide` are inlined into one copy per width, where it is a constant. */
#define SYMBOL(s, i) (wide ? ((const idx *)(s))[i] : (idx)((const uint8_t *)(s))[i])
#define IS_S(types, i) (((types)[(size_t)(i) >> 3] >> ((i)&7)) & 1)
#define IS_LMS(types, i) ((i) > 0 && IS_S(types, i) && !IS_S(types, (i)-1))

static SPECIALIZE void count_symbols(const void *s, int wide, idx n, idx k, idx *count) {
    memset(count, 0, sizeof(idx) * (size_t)k);
    for (idx i = 0; i < n; i++) count[SYMBOL(s, i)]++;
}

static void bucket_heads(const idx *count, idx k, idx *bucket) {
    idx sum = 0;
    for (idx c = 0; c < k; c++) {
        bucket[c] = sum;
        sum += count[c];
    }
}

static void bucket_tails(const idx *count, idx k, idx *bucket) {
    idx sum = 0;
    for (idx c = 0; c < k; c++) {
        sum += count[c];
        bucket[c] = sum;
    }
}

/* From the sorted LMS suffixes (at their buckets' tails): the L-type suffixes left to right, then the S-type
 * ones right to left. */
static SPECIALIZE void induce(const void *s, int wide, idx *sa, idx n, idx k, const uint8_t *types, const idx *count,
                              idx *bucket) {
    bucket_heads(count, k, bucket);
    for (idx i = 0; i < n; i++) {
        idx j = sa[i] - 1;
        if (j >= 0 && !IS_S(types, j)) sa[bucket[SYMBOL(s, j)]++] = j;
    }
    bucket_tails(count, k, bucket);
    for (idx i = n - 1; i >= 0; i--) {
        idx j = sa[i] - 1;
        if (j >= 0 && IS_S(types, j)) sa[--bucket[SYMBOL(s, j)]] = j;
    }
}

static void suffix_array32(const idx *s, idx *sa, idx n, idx k, uint8_t *types, idx *count, idx *bucket);

static SPECIALIZE void suffix_array_level(const void *s, int wide, idx *sa, idx n, idx k, uint8_t *types, idx *count,
                                          idx *bucket) {
    /* S-type (bit set): suffix i is smaller than suffix i + 1; L-type otherwise */
    memset(types, 0, ((size_t)n + 7) / 8);
    types[(size_t)(n - 1) >> 3] |= (uint8_t)(1 << ((n - 1) & 7));
    int next_is_s = 1;
    for (idx i = n - 2; i >= 0; i--) {
        idx c = SYMBOL(s, i), next = SYMBOL(s, i + 1);
        next_is_s = c < next || (c == next && next_is_s);
        if (next_is_s) types[(size_t)i >> 3] |= (uint8_t)(1 << (i & 7));
    }

    /* sort the LMS substrings: place the LMS positions at their buckets' tails and induce */
    count_symbols(s, wide, n, k, count);
    bucket_tails(count, k, bucket);
    for (idx i = 0; i < n; i++) sa[i] = -1;
    for (idx i = 1; i < n; i++)
        if (IS_LMS(types, i)) sa[--bucket[SYMBOL(s, i)]] = i;
    induce(s, wide, sa, n, k, types, count, bucket);

    /* the sorted LMS positions to the front, then name the LMS substrings in that order */
    idx lms = 0;
    for (idx i = 0; i < n; i++)
        if (IS_LMS(types, sa[i])) sa[lms++] = sa[i];
    for (idx i = lms; i < n; i++) sa[i] = -1;
    idx names = 0, previous = -1;
    for (idx i = 0; i < lms; i++) {
        idx position = sa[i];
        int differs = previous < 0;
        for (idx d = 0; !differs; d++) {
            if (SYMBOL(s, position + d) != SYMBOL(s, previous + d) ||
                IS_S(types, position + d) != IS_S(types, previous + d))
                differs = 1;
            else if (d > 0 && (IS_LMS(types, position + d) || IS_LMS(types, previous + d)))
                break; /* both substrings end here, equal */
        }
        if (differs) {
            names++;
            previous = position;
        }
        sa[lms + position / 2] = names - 1; /* LMS positions are never adjacent: position / 2 is unique */
    }
    for (idx i = n - 1, j = n - 1; i >= lms; i--)
        if (sa[i] >= 0) sa[j--] = sa[i];

    /* the reduced string (names in text order) at the end of sa; its suffix array at the front */
    idx *reduced = sa + n - lms;
    if (names < lms) {
        suffix_array32(reduced, sa, lms, names, types + ((size_t)n + 7) / 8, count, bucket);
    } else {
        for (idx i = 0; i < lms; i++) sa[reduced[i]] = i;
    }

    /* the LMS suffixes in sorted order at their buckets' tails, then induce the rest */
    for (idx i = 1, j = 0; i < n; i++)
        if (IS_LMS(types, i)) reduced[j++] = i;
    for (idx i = 0; i < lms; i++) sa[i] = reduced[sa[i]];
    for (idx i = lms; i < n; i++) sa[i] = -1;
    count_symbols(s, wide, n, k, count);
    bucket_tails(count, k, bucket);
    for (idx i = lms - 1; i >= 0; i--) {
        idx j = sa[i];
        sa[i] = -1;
        sa[--bucket[SYMBOL(s, j)]] = j;
    }
    induce(s, wide, sa, n, k, types, count, bucket);
}

static void suffix_array32(const idx *s, idx *sa, idx n, idx k, uint8_t *types, idx *count, idx *bucket) {
    suffix_array_level(s, 1, sa, n, k, types, count, bucket);
}

static void suffix_array8(const uint8_t *s, idx *sa, idx n, idx k, uint8_t *types, idx *count, idx *bucket) {
    suffix_array_level(s, 0, sa, n, k, types, count, bucket);
}

/* ---- 3. phrases ------------------------------------------------------------------------------------------- */

/* Phrases of x[start..n-2] (x[n-1] is the sentinel, sa[0] == n - 1). stack holds n + 1 entries; before and
 * after hold n - start each. */
static SPECIALIZE Py_ssize_t count_phrases(const void *x, int wide, const idx *sa, idx n, idx start, idx *before,
                                           idx *after, idx *stack) {
    /* before[i - start] / after[i - start]: the nearest suffix before / after suffix i in suffix-array order
     * that starts earlier in the text (-1 if none), from one pass with a stack of increasing positions. */
    idx top = 0;
    stack[0] = -1;
    for (idx r = 1; r <= n; r++) {
        idx position = r < n ? sa[r] : -1;
        while (stack[top] > position) {
            idx popped = stack[top--];
            if (popped >= start) {
                before[popped - start] = stack[top];
                after[popped - start] = position;
            }
        }
        stack[++top] = position;
    }
    Py_ssize_t phrases = 0;
    for (idx i = start; i < n - 1; phrases++) {
        idx longest = 0;
        idx candidates[2] = {before[i - start], after[i - start]};
        for (int c = 0; c < 2; c++) {
            idx j = candidates[c], length = 0;
            if (j < 0) continue;
            /* x ends with the unique sentinel 0, so the loop stops by itself (j < i) */
            while (SYMBOL(x, j + length) == SYMBOL(x, i + length)) length++;
            if (length > longest) longest = length;
        }
        i += longest > 0 ? longest : 1;
    }
    return phrases;
}

static Py_ssize_t count_phrases8(const uint8_t *x, const idx *sa, idx n, idx start, idx *before, idx *after,
                                 idx *stack) {
    return count_phrases(x, 0, sa, n, start, before, after, stack);
}

static Py_ssize_t count_phrases32(const idx *x, const idx *sa, idx n, idx start, idx *before, idx *after,
                                  idx *stack) {
    return count_phrases(x, 1, sa, n, start, before, after, stack);
}

/* ---- 3b. short texts: phrases straight from hash chains ------------------------------------------------
 * On a few hundred symbols the suffix array's passes cost more than looking for each phrase directly, as
 * zlib does: every position j is chained to the previous position with the same two symbols (by hash), and
 * a phrase starting at i is the longest match among the positions chained before i (a match of one symbol
 * counts as much as none, so two-symbol keys miss nothing). Natural text has short chains; repetitive text
 * can make them long, so the walk has a budget and, past it, the suffix-array path takes over. */

/* x: S + sep + T + sentinel as code points (sep and sentinel beyond Unicode), n symbols with the sentinel.
 * chained holds n entries, heads 1 << bits. Returns the phrases of T, or -1 once the budget is spent. */
static Py_ssize_t chain_phrases(const uint32_t *x, idx n, idx start, idx *chained, idx *heads, int bits,
                                Py_ssize_t budget) {
    idx last = n - 1; /* the sentinel's position */
    memset(heads, 0xFF, sizeof(idx) << bits);
    for (idx j = 0; j + 1 < last; j++) {
        uint32_t key = ((x[j] * 2654435761u) ^ (x[j + 1] * 2246822519u)) >> (32 - bits);
        chained[j] = heads[key];
        heads[key] = j;
    }
    Py_ssize_t phrases = 0;
    for (idx i = start; i < last; phrases++) {
        idx longest = 1;
        if (i + 1 < last) {
            for (idx j = chained[i]; j >= 0; j = chained[j]) {
                if (--budget < 0) return -1;
                if (x[j + longest] != x[i + longest]) continue; /* cannot be longer than the longest so far */
                idx length = 0;
                while (x[j + length] == x[i + length]) length++; /* stops at the sentinel at the latest */
                budget -= length;
                if (length > longest) {
                    longest = length;
                    if (i + longest == last) break; /* reaches the end: nothing can be longer */
                }
            }
        }
        i += longest;
    }
    return phrases;
}

static void copy_code_points(text t, uint32_t *out) {
    Py_ssize_t i;
    switch (t.kind) {
    case PyUnicode_1BYTE_KIND:
        for (i = 0; i < t.length; i++) out[i] = ((const Py_UCS1 *)t.data)[i];
        break;
    case PyUnicode_2BYTE_KIND:
        for (i = 0; i < t.length; i++) out[i] = ((const Py_UCS2 *)t.data)[i];
        break;
    default:
        memcpy(out, t.data, sizeof(uint32_t) * (size_t)t.length);
        break;
    }
}

/* The phrases by hash chains, -1 when the budget ran out (use the suffix array), -2 when memory ran out. */
static Py_ssize_t chain_distance(text original, text edited) {
    idx n = (idx)(original.length + 1 + edited.length + 1), start = (idx)original.length + 1;
    int bits = 8;
    while ((1 << bits) < n) bits++;
    size_t words = 2 * (size_t)n + ((size_t)1 << bits);
    uint32_t *x = PyMem_RawMalloc(sizeof(uint32_t) * words);
    if (x == NULL) return -2;
    copy_code_points(original, x);
    x[start - 1] = 0x110000; /* sep */
    copy_code_points(edited, x + start);
    x[n - 1] = 0x110001; /* sentinel */
    Py_ssize_t phrases = chain_phrases(x, n, start, (idx *)(x + n), (idx *)(x + 2 * (size_t)n), bits,
                                       CHAIN_BUDGET_PER_SYMBOL * (Py_ssize_t)n);
    PyMem_RawFree(x);
    return phrases;
}

/* ---- one pair --------------------------------------------------------------------------------------------- */

/* The distance by suffix array, or -1 when memory ran out. */
static Py_ssize_t suffix_array_distance(text original, text edited, Py_UCS4 max_char) {
    idx n = (idx)(original.length + 1 + edited.length + 1); /* S + sep + T + sentinel */
    idx start = (idx)original.length + 1;
    ranker r = {0};
    idx *x = PyMem_RawMalloc(sizeof(idx) * (size_t)n);
    if (x == NULL || !ranker_init(&r, max_char, n)) {
        PyMem_RawFree(x);
        ranker_free(&r);
        return -1;
    }
    rank_text(&r, original.kind, original.data, original.length, x);
    rank_text(&r, edited.kind, edited.data, edited.length, x + start);
    ranker_free(&r);
    idx k = r.distinct + 2; /* the sentinel 0, the symbols, sep */
    x[start - 1] = k - 1;
    x[n - 1] = 0;

    size_t half = (size_t)(k > n / 2 + 2 ? k : n / 2 + 2);
    size_t tail = (size_t)(n - start);
    /* sa | count, bucket (later the stack) | before | after | types (n bits, then n/2 at most, ...) | bytes */
    size_t words = (size_t)n + 2 * half + 2 * tail + ((size_t)n / 4 + 64 + sizeof(idx) - 1) / sizeof(idx);
    int narrow = k <= 256;
    if (narrow) words += ((size_t)n + sizeof(idx) - 1) / sizeof(idx);
    idx *block = PyMem_RawMalloc(sizeof(idx) * words);
    if (block == NULL) {
        PyMem_RawFree(x);
        return -1;
    }
    idx *sa = block, *count = sa + n, *bucket = count + half, *before = bucket + half, *after = before + tail;
    uint8_t *types = (uint8_t *)(after + tail), *bytes = types + (size_t)n / 4 + 64;
    Py_ssize_t phrases;
    if (narrow) {
        for (idx i = 0; i < n; i++) bytes[i] = (uint8_t)x[i];
        PyMem_RawFree(x);
        x = NULL;
        suffix_array8(bytes, sa, n, k, types, count, bucket);
        phrases = count_phrases8(bytes, sa, n, start, before, after, count);
    } else {
        suffix_array32(x, sa, n, k, types, count, bucket);
        phrases = count_phrases32(x, sa, n, start, before, after, count);
    }
    PyMem_RawFree(block);
    PyMem_RawFree(x);
    return phrases;
}

/* The distance, or -1 when memory ran out. Touches no Python object: callable without the GIL. */
static Py_ssize_t pair_distance(text original, text edited, Py_UCS4 max_char) {
    if (edited.length == 0) return 0;
    if (original.length + edited.length + 2 <= CHAINS_UP_TO) {
        Py_ssize_t phrases = chain_distance(original, edited);
        if (phrases != -1) return phrases < 0 ? -1 : phrases;
    }
    return suffix_array_distance(original, edited, max_char);
}

static int check_text(PyObject *s, const char *what) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what, Py_TYPE(s)->tp_name);
        return 0;
    }
    return PyUnicode_READY(s) == 0;
}

/* The distance of one pair of str objects, or -1 with an exception set. */
static Py_ssize_t distance_of(PyObject *original, PyObject *edited) {
    if (!check_text(original, "original") || !check_text(edited, "edited")) return -1;
    text a = text_of(original), b = text_of(edited);
    if (a.length + b.length + 2 > MAX_SYMBOLS) {
        PyErr_SetString(PyExc_OverflowError, "texts too long for the compiled compression distance");
        return -1;
    }
    Py_UCS4 max_char = PyUnicode_MAX_CHAR_VALUE(original);
    if (PyUnicode_MAX_CHAR_VALUE(edited) > max_char) max_char = PyUnicode_MAX_CHAR_VALUE(edited);
    Py_ssize_t phrases;
    if (a.length + b.length + 2 >= RELEASE_GIL_FROM) {
        Py_BEGIN_ALLOW_THREADS
        phrases = pair_distance(a, b, max_char);
        Py_END_ALLOW_THREADS
    } else {
        phrases = pair_distance(a, b, max_char);
    }
    if (phrases < 0) PyErr_NoMemory();
    return phrases;
}

/* ---- the module ------------------------------------------------------------------------------------------- */

static PyObject *lz77_distance(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "distance() takes 2 arguments (original, edited), %zd given", nargs);
        return NULL;
    }
    Py_ssize_t phrases = distance_of(args[0], args[1]);
    return phrases < 0 ? NULL : PyLong_FromSsize_t(phrases);
}

static PyObject *lz77_distances(PyObject *module, PyObject *pairs) {
    /* A tuple of the pairs, and a reference to each pair's texts while it is computed: with the GIL released
     * on long texts, another thread may change the caller's list meanwhile. */
    PyObject *items = PySequence_Tuple(pairs);
    if (items == NULL) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    PyObject *result = PyList_New(count);
    if (result == NULL) goto fail;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PyTuple_GET_ITEM(items, i);
        PyObject *original, *edited;
        if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
            original = PyTuple_GET_ITEM(pair, 0);
            edited = PyTuple_GET_ITEM(pair, 1);
        } else if (PyList_Check(pair) && PyList_GET_SIZE(pair) == 2) {
            original = PyList_GET_ITEM(pair, 0);
            edited = PyList_GET_ITEM(pair, 1);
        } else {
            PyErr_Format(PyExc_TypeError, "pair %zd: expected (original, edited), not %.100s", i,
                         Py_TYPE(pair)->tp_name);
            goto fail;
        }
        Py_INCREF(original);
        Py_INCREF(edited);
        Py_ssize_t phrases = distance_of(original, edited);
        Py_DECREF(original);
        Py_DECREF(edited);
        if (phrases < 0) goto fail;
        PyObject *value = PyLong_FromSsize_t(phrases);
        if (value == NULL) goto fail;
        PyList_SET_ITEM(result, i, value);
    }
    Py_DECREF(items);
    return result;
fail:
    Py_XDECREF(result);
    Py_DECREF(items);
    return NULL;
}

/* For the tests: each path on its own, whatever the dispatch in pair_distance would choose. */
static PyObject *lz77_by_path(PyObject *const *args, Py_ssize_t nargs, int chains) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "takes 2 arguments (original, edited)");
        return NULL;
    }
    if (!check_text(args[0], "original") || !check_text(args[1], "edited")) return NULL;
    text a = text_of(args[0]), b = text_of(args[1]);
    if (a.length + b.length + 2 > MAX_SYMBOLS) return PyErr_Format(PyExc_OverflowError, "texts too long");
    if (b.length == 0) return PyLong_FromLong(0);
    Py_UCS4 max_char = PyUnicode_MAX_CHAR_VALUE(args[0]);
    if (PyUnicode_MAX_CHAR_VALUE(args[1]) > max_char) max_char = PyUnicode_MAX_CHAR_VALUE(args[1]);
    Py_ssize_t phrases = chains ? chain_distance(a, b) : suffix_array_distance(a, b, max_char);
    if (chains && phrases == -1) Py_RETURN_NONE; /* over budget */
    if (phrases < 0) return PyErr_NoMemory();
    return PyLong_FromSsize_t(phrases);
}

static PyObject *lz77_by_chains(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return lz77_by_path(args, nargs, 1);
}

static PyObject *lz77_by_suffix_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return lz77_by_path(args, nargs, 0);
}

static PyMethodDef lz77_methods[] = {
    {"distance", (PyCFunction)(void (*)(void))lz77_distance, METH_FASTCALL,
     "distance(original, edited) -> int: LZ77 phrases of edited when it may copy from original."},
    {"distances", lz77_distances, METH_O,
     "distances(pairs) -> list[int]: distance() of each (original, edited) pair of an iterable."},
    {"_by_chains", (PyCFunction)(void (*)(void))lz77_by_chains, METH_FASTCALL,
     "For tests: the hash-chain path alone, None when it gives up (over its budget)."},
    {"_by_suffix_array", (PyCFunction)(void (*)(void))lz77_by_suffix_array, METH_FASTCALL,
     "For tests: the suffix-array path alone."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lz77_module = {
    PyModuleDef_HEAD_INIT, "_lz77", "The compression distance's LZ77 phrase count (see compression.py).", -1,
    lz77_methods,
};

PyMODINIT_FUNC PyInit__lz77(void) {
    PyObject *module = PyModule_Create(&lz77_module);
    if (module != NULL && PyModule_AddIntConstant(module, "VERSION", LZ77_VERSION) < 0) Py_CLEAR(module);
    return module;
}
