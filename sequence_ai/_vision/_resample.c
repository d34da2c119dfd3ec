/* Antialiased downscale of a uint8 frame, written for encode() (sequence_ai/_resize.py).
 *
 * The taps are Pillow's: for output pixel j of a pass from `in` to `out` samples the filter is
 * centred at (j + 0.5) * in / out, widened by the scale when shrinking, sampled at the input
 * pixel centres and normalised to sum 1 (bilinear: the triangle of support 1; area: the box of
 * support 0.5). The two differences from Pillow are deliberate: the vertical pass runs first
 * (its inner loop runs along a row, which the compiler vectorises), and the intermediate stays
 * in float instead of being rounded to 8 bits. With non-negative taps Pillow's result is the
 * exact value plus a rounding error of at most half a level, rounded; ours is the exact value
 * rounded: the two never differ by more than 1. Filters with negative lobes (bicubic, lanczos)
 * are not offered here, because Pillow's intermediate clipping would break that bound.
 *
 * One call fills the rows [row_begin, row_end) of the resized picture inside a caller-owned
 * canvas (the letterbox bars stay as the caller left them), with the GIL released, so bands of
 * rows can run on several threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { FILTER_BILINEAR = 0, FILTER_AREA = 1 };

typedef struct {
    int ksize;    /* taps stored per output sample */
    int *first;   /* first input sample of each output sample */
    int *count;   /* taps used by each output sample */
    float *w;     /* out * ksize weights */
} Taps;

static double tap_weight(int filter, double x) {
    if (filter == FILTER_AREA)
        return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static void taps_free(Taps *t) {
    free(t->first);
    free(t->count);
    free(t->w);
    t->first = t->count = NULL;
    t->w = NULL;
}

static int taps_make(Taps *t, int in_size, int out_size, int filter) {
    double scale = (double)in_size / out_size;
    double widen = scale < 1.0 ? 1.0 : scale;
    double support = (filter == FILTER_AREA ? 0.5 : 1.0) * widen;
    int j, k;

    t->ksize = (int)ceil(support) * 2 + 1;
    t->first = malloc(sizeof(int) * out_size);
    t->count = malloc(sizeof(int) * out_size);
    t->w = calloc((size_t)out_size * t->ksize, sizeof(float));
    if (!t->first || !t->count || !t->w) {
        taps_free(t);
        return -1;
    }
    for (j = 0; j < out_size; j++) {
        double centre = (j + 0.5) * scale;
        int lo = (int)(centre - support + 0.5);
        int hi = (int)(centre + support + 0.5);
        float *w = t->w + (size_t)j * t->ksize;
        double sum = 0.0;
        if (lo < 0)
            lo = 0;
        if (hi > in_size)
            hi = in_size;
        if (hi - lo > t->ksize)
            hi = lo + t->ksize;
        for (k = 0; k < hi - lo; k++)
            sum += tap_weight(filter, (k + lo - centre + 0.5) / widen);
        for (k = 0; k < hi - lo; k++)
            w[k] = (float)(sum != 0.0 ? tap_weight(filter, (k + lo - centre + 0.5) / widen) / sum : 0.0);
        t->first[j] = lo;
        t->count[j] = hi - lo;
    }
    return 0;
}

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* acc[x] = sum_k w[k] * rows[k][x] over one row of `length` bytes: the hot loop. */
VECTOR_CLONES
static void weigh_rows(float *restrict acc, const uint8_t *restrict src, Py_ssize_t row_stride,
                       int first, int count, const float *restrict w, Py_ssize_t length) {
    const uint8_t *row = src + (Py_ssize_t)first * row_stride;
    float w0 = w[0];
    Py_ssize_t x;
    int k;
    for (x = 0; x < length; x++)
        acc[x] = w0 * row[x];
    for (k = 1; k < count; k++) {
        const uint8_t *r = src + (Py_ssize_t)(first + k) * row_stride;
        float wk = w[k];
        for (x = 0; x < length; x++)
            acc[x] += wk * r[x];
    }
}

static inline uint8_t to_level(float v) {
    v = floorf(v + 0.5f);
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

static void resample_rows(const uint8_t *src, Py_ssize_t row_stride, int pixel_stride, int channels,
                          int width, const Taps *tv, const Taps *th, int out_w,
                          uint8_t *dst, Py_ssize_t dst_stride, int row_begin, int row_end, float *acc) {
    Py_ssize_t length = (Py_ssize_t)width * pixel_stride;
    int i, j, k, c;
    for (i = row_begin; i < row_end; i++) {
        uint8_t *out = dst + (Py_ssize_t)i * dst_stride;
        weigh_rows(acc, src, row_stride, tv->first[i], tv->count[i], tv->w + (size_t)i * tv->ksize, length);
        for (j = 0; j < out_w; j++) {
            const float *w = th->w + (size_t)j * th->ksize;
            const float *in = acc + (Py_ssize_t)th->first[j] * pixel_stride;
            int n = th->count[j];
            if (channels == 3) {
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
                for (k = 0; k < n; k++, in += pixel_stride) {
                    s0 += w[k] * in[0];
                    s1 += w[k] * in[1];
                    s2 += w[k] * in[2];
                }
                out[0] = to_level(s0);
                out[1] = to_level(s1);
                out[2] = to_level(s2);
                out += 3;
            } else {
                for (c = 0; c < channels; c++) {
                    float s = 0.0f;
                    for (k = 0; k < n; k++)
                        s += w[k] * in[(Py_ssize_t)k * pixel_stride + c];
                    *out++ = to_level(s);
                }
            }
        }
    }
}

static PyObject *resample_into(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    int height, width, pixel_stride, channels, canvas_w, canvas_h, off_x, off_y, out_w, out_h, filter;
    int row_begin, row_end;
    Py_ssize_t row_stride;
    PyObject *result = NULL;
    Taps tv = {0}, th = {0};
    float *acc = NULL;
    (void)self;

    if (!PyArg_ParseTuple(args, "y*iiniiw*iiiiiiiii", &src, &height, &width, &row_stride, &pixel_stride,
                          &channels, &dst, &canvas_w, &canvas_h, &off_x, &off_y, &out_w, &out_h, &filter,
                          &row_begin, &row_end))
        return NULL;
    if (height < 1 || width < 1 || out_w < 1 || out_h < 1 || channels < 1 || pixel_stride < channels
        || row_stride < (Py_ssize_t)width * pixel_stride) {
        PyErr_SetString(PyExc_ValueError, "resample: inconsistent frame geometry");
        goto done;
    }
    if ((Py_ssize_t)(height - 1) * row_stride + (Py_ssize_t)width * pixel_stride > src.len) {
        PyErr_SetString(PyExc_ValueError, "resample: the frame buffer is shorter than its geometry");
        goto done;
    }
    if (off_x < 0 || off_y < 0 || off_x + out_w > canvas_w || off_y + out_h > canvas_h
        || (Py_ssize_t)canvas_w * canvas_h * channels != dst.len) {
        PyErr_SetString(PyExc_ValueError, "resample: the picture does not fit the canvas");
        goto done;
    }
    if (row_begin < 0 || row_end > out_h || row_begin > row_end || (filter != FILTER_BILINEAR && filter != FILTER_AREA)) {
        PyErr_SetString(PyExc_ValueError, "resample: bad row range or filter");
        goto done;
    }
    if (taps_make(&tv, height, out_h, filter) || taps_make(&th, width, out_w, filter)
        || !(acc = malloc(sizeof(float) * (size_t)width * pixel_stride))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        Py_ssize_t dst_stride = (Py_ssize_t)canvas_w * channels;
        uint8_t *origin = (uint8_t *)dst.buf + (Py_ssize_t)off_y * dst_stride + (Py_ssize_t)off_x * channels;
        resample_rows((const uint8_t *)src.buf, row_stride, pixel_stride, channels, width, &tv, &th, out_w,
                      origin, dst_stride, row_begin, row_end, acc);
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    free(acc);
    taps_free(&tv);
    taps_free(&th);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

static PyMethodDef methods[] = {
    {"resample_into", resample_into, METH_VARARGS,
     "resample_into(src, height, width, row_stride, pixel_stride, channels, dst, canvas_w, canvas_h, "
     "off_x, off_y, out_w, out_h, filter, row_begin, row_end): fill rows of the resized picture in dst."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resample", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resample(void) { return PyModule_Create(&module); }
