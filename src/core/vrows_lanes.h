/* vrows_lanes.h - core/vrows.c's loops for one vector width. Not a header of
 * its own: vrows.c includes it once per form with
 *   VR_VL      floats per register: 16 (AVX-512), 8 (AVX2), 4 (SSE)
 *   VR_SUF     the form's name suffix
 *   VR_TARGET  its target attribute (empty for the plain form)
 * and it defines that form's static functions VR(name) = name_SUF. Rows run
 * in steps of 16 values (NR registers of VR_VL), the last partial step padded
 * through the same lanes; sums over a row: 16 lane sums of the full steps,
 * added in lane order, then the tail's values one by one. */

#define VR_JOIN2(a, b) a##_##b
#define VR_JOIN(a, b) VR_JOIN2(a, b)
#define VR(name) VR_JOIN(name, VR_SUF)

typedef float VR(vf) __attribute__((vector_size(VR_VL * 4), aligned(4), may_alias));
typedef int32_t VR(vi) __attribute__((vector_size(VR_VL * 4), aligned(4), may_alias));
typedef double VR(vd) __attribute__((vector_size(VR_VL * 8), aligned(8), may_alias));
/* half a float register, and a register of doubles (VR_VL / 2 of them): the
 * 16 lane sums in double are 2 NR such registers. (A double vector as wide as
 * VF is two registers: GCC kept such accumulators in memory and moved them
 * through general registers, AVX2's LayerNorm of a 64-wide row 270 ns.) */
typedef float VR(vfh) __attribute__((vector_size(VR_VL * 2), aligned(4), may_alias));
typedef double VR(vdn) __attribute__((vector_size(VR_VL * 4), aligned(8), may_alias));
#define VF VR(vf)
#define VI VR(vi)
#define VD VR(vd)
#define VFH VR(vfh)
#define VDN VR(vdn)
#define NR (16 / VR_VL)
#define ND (2 * NR)
#if VR_VL == 16
#define VR_LO(v) __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
#define VR_HI(v) __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)
#define VR_CAT(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#elif VR_VL == 8
#define VR_LO(v) __builtin_shufflevector(v, v, 0, 1, 2, 3)
#define VR_HI(v) __builtin_shufflevector(v, v, 4, 5, 6, 7)
#define VR_CAT(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7)
#else
#define VR_LO(v) __builtin_shufflevector(v, v, 0, 1)
#define VR_HI(v) __builtin_shufflevector(v, v, 2, 3)
#define VR_CAT(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3)
#endif
#define SEL(m, a, b) ((VF)(((m) & (VI)(a)) | (~(m) & (VI)(b))))
#define VRI static inline __attribute__((always_inline)) VR_TARGET
#define VR_FORM VR_TARGET __attribute__((optimize("O3", "no-math-errno", "no-trapping-math")))
#if VR_VL == 16
#define EXPC(out, x) VEXP_STEPS(VF, out, x, VEXP_ROUND16, VEXP_SCALE16)
#else
#define VR_SCALE(p, k) VEXP_SCALE_BITS(VI, p, k)
#define EXPC(out, x) VEXP_STEPS(VF, out, x, VEXP_ROUND_ADD, VR_SCALE)
#endif

/* e^x per lane, x clamped to [-87, 88] */
VRI VF VR(exp)(VF x) {
    const VF lo = (VF){0} - 87.0f, hi = (VF){0} + 88.0f;
    x = SEL(x < lo, lo, x);
    x = SEL(x > hi, hi, x);
    VF e;
    EXPC(e, x);
    return e;
}

/* v = 16 values from p, the ones past nv (< 16) set to pad */
VRI void VR(load)(const float *p, int nv, float pad, VF *v) {
    if (nv >= 16) {
        for (int k = 0; k < NR; k++) v[k] = *(const VF *)(p + k * VR_VL);
        return;
    }
    _Alignas(64) float t[16];
    for (int i = 0; i < 16; i++) t[i] = i < nv ? p[i] : pad;
    for (int k = 0; k < NR; k++) v[k] = *(const VF *)(t + k * VR_VL);
}

/* v's first nv (<= 16) values to p */
VRI void VR(store)(float *p, int nv, const VF *v) {
    if (nv >= 16) {
        for (int k = 0; k < NR; k++) *(VF *)(p + k * VR_VL) = v[k];
        return;
    }
    _Alignas(64) float t[16];
    for (int k = 0; k < NR; k++) *(VF *)(t + k * VR_VL) = v[k];
    for (int i = 0; i < nv; i++) p[i] = t[i];
}

/* v's lanes as doubles into d[0] (its first half) and d[1] */
VRI void VR(to_d)(VF v, VDN *d) {
    d[0] = __builtin_convertvector((VFH)VR_LO(v), VDN);
    d[1] = __builtin_convertvector((VFH)VR_HI(v), VDN);
}

/* the lane sums s (ND registers, 16 doubles in lane order), in lane order */
VRI double VR(lanes_sum)(const VDN *s) {
    _Alignas(64) double t[16];
    for (int k = 0; k < ND; k++) *(VDN *)(t + k * (VR_VL / 2)) = s[k];
    double a = 0.0;
    for (int l = 0; l < 16; l++) a += t[l];
    return a;
}

/* the largest of the lanes m (NR), in lane order (as a scalar loop from lane 0) */
VRI float VR(lanes_max)(const VF *m) {
    _Alignas(64) float t[16];
    for (int k = 0; k < NR; k++) *(VF *)(t + k * VR_VL) = m[k];
    float mx = t[0];
    for (int l = 1; l < 16; l++) mx = t[l] > mx ? t[l] : mx;
    return mx;
}

VR_FORM static void VR(exp_row)(float *x, int n) {
    for (int c = 0; c < n; c += 16) {
        VF v[NR];
        int nv = n - c < 16 ? n - c : 16;
        VR(load)(x + c, nv, 0.0f, v);
        for (int k = 0; k < NR; k++) v[k] = VR(exp)(v[k]);
        VR(store)(x + c, nv, v);
    }
}

VR_FORM static void VR(add)(float *y, const float *b, int n) {
    int j = 0;
    for (; j + VR_VL <= n; j += VR_VL) *(VF *)(y + j) = *(const VF *)(y + j) + *(const VF *)(b + j);
    for (; j < n; j++) y[j] += b[j];
}

/* the product rounded before the add: no FMA, as the scalar loop */
VR_FORM __attribute__((optimize("fp-contract=off"))) static void VR(axpy)(float *y, float g, const float *x,
                                                                         int n) {
    const VF gv = (VF){0} + g;
    int j = 0;
    for (; j + VR_VL <= n; j += VR_VL) {
        VF t = gv * *(const VF *)(x + j);
        *(VF *)(y + j) = *(const VF *)(y + j) + t;
    }
    for (; j < n; j++) {
        float t = g * x[j];
        y[j] += t;
    }
}

/* max of s (n >= 1), as a scalar loop from s[0] finds it (NaNs after s[0]
 * passed over; s[0] NaN: NaN) */
VRI float VR(row_max)(const float *s, int n) {
    if (s[0] != s[0]) return s[0];
    VF m[NR];
    for (int k = 0; k < NR; k++) m[k] = (VF){0} - INFINITY;
    for (int c = 0; c < n; c += 16) {
        VF v[NR];
        VR(load)(s + c, n - c, -INFINITY, v);
        for (int k = 0; k < NR; k++) m[k] = SEL(v[k] > m[k], v[k], m[k]);
    }
    float mx = VR(lanes_max)(m);
    return mx > s[0] ? mx : s[0]; // s all -inf: s[0]
}

/* sum of e^(x - mx) over x (n) in double, e (n) the exps when not NULL */
VRI double VR(exp_sum)(const float *x, int n, float mx, float *e) {
    VDN acc[ND];
    for (int k = 0; k < ND; k++) acc[k] = (VDN){0};
    const VF m = (VF){0} + mx;
    int c = 0;
    for (; c + 16 <= n; c += 16)
        for (int k = 0; k < NR; k++) {
            VF v = VR(exp)(*(const VF *)(x + c + k * VR_VL) - m);
            if (e) *(VF *)(e + c + k * VR_VL) = v;
            VDN dv[2];
            VR(to_d)(v, dv);
            acc[2 * k] += dv[0], acc[2 * k + 1] += dv[1];
        }
    double s = VR(lanes_sum)(acc);
    if (c < n) { // the tail through the same lanes, added one by one
        VF v[NR];
        _Alignas(64) float t[16];
        VR(load)(x + c, n - c, mx, v);
        for (int k = 0; k < NR; k++) *(VF *)(t + k * VR_VL) = VR(exp)(v[k] - m);
        for (int i = 0; c + i < n; i++) {
            s += t[i];
            if (e) e[c + i] = t[i];
        }
    }
    return s;
}

VR_FORM static void VR(softmax)(float *s, int n) {
    const float mx = VR(row_max)(s, n);
    const float inv = (float)(1.0 / VR(exp_sum)(s, n, mx, s));
    const VF iv = (VF){0} + inv;
    int c = 0;
    for (; c + VR_VL <= n; c += VR_VL) *(VF *)(s + c) *= iv;
    for (; c < n; c++) s[c] *= inv;
}

VR_FORM static double VR(logsumexp)(const float *x, int n, int *argmax) {
    // each lane's first largest value and its index (NaNs passed over), then
    // the lanes in order: the first index of the row's largest value
    VF m[NR];
    VI id[NR];
    for (int k = 0; k < NR; k++) m[k] = (VF){0} - INFINITY, id[k] = (VI){0} - 1;
    for (int c = 0; c < n; c += 16) {
        VF v[NR];
        VR(load)(x + c, n - c, -INFINITY, v);
        for (int k = 0; k < NR; k++) {
            const VI gt = v[k] > m[k];
            m[k] = SEL(gt, v[k], m[k]);
            id[k] = (gt & (*(const VI *)(vr_iota + k * VR_VL) + c)) | (~gt & id[k]);
        }
    }
    _Alignas(64) float tm[16];
    _Alignas(64) int32_t ti[16];
    for (int k = 0; k < NR; k++) *(VF *)(tm + k * VR_VL) = m[k], *(VI *)(ti + k * VR_VL) = id[k];
    int am = 0;
    if (x[0] == x[0]) // x[0] NaN: a scalar loop's argmax stays 0
        for (int l = 0; l < 16; l++)
            if (ti[l] >= 0 && (tm[l] > x[am] || (tm[l] == x[am] && ti[l] < am))) am = ti[l];
    *argmax = am;
    const float mx = x[am];
    return (double)mx + log(VR(exp_sum)(x, n, mx, NULL));
}

/* GPT-2's gelu_new, x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3) */
VRI VF VR(gelu_tanh1)(VF x) {
    VF u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + VR(exp)(-2.0f * u));
}

VR_FORM static void VR(gelu_tanh)(float *x, size_t n) {
    for (size_t c = 0; c < n; c += 16) {
        VF v[NR];
        int nv = n - c < 16 ? (int)(n - c) : 16;
        VR(load)(x + c, nv, 0.0f, v);
        for (int k = 0; k < NR; k++) v[k] = VR(gelu_tanh1)(v[k]);
        VR(store)(x + c, nv, v);
    }
}

/* H (m, h): v > 0 ? v : 0 per value of v = H + b (NaN and -0 give +0, as the
 * scalar rule); exact, so a row's tail runs as scalars */
VR_FORM static void VR(relu_bias)(float *H, const float *b, int m, int h) {
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        int u = 0;
        for (; u + VR_VL <= h; u += VR_VL) {
            VF v = *(const VF *)(hr + u) + *(const VF *)(b + u);
            *(VF *)(hr + u) = (VF)((VI)v & (v > (VF){0}));
        }
        for (; u < h; u++) {
            float v = hr[u] + b[u];
            hr[u] = v > 0.0f ? v : 0.0f;
        }
    }
}

/* The exact-erf GELU 0.5 v (1 + erf(v / sqrt 2)), written with erfc so that
 * the negative tail, where 1 + erf cancels, keeps its relative accuracy:
 * v >= 0: v - 0.5 v erfc(z), v < 0: 0.5 v erfc(z), z = |v| / sqrt 2, and
 * erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Numerical Recipes'
 * erfcc: fractional error below 1.2e-7). Within 2.4e-7 of the double formula
 * over [-12, 12], against 4.5e-7 for float erff. */
VRI VF VR(gelu1)(VF v) {
    const VF zero = (VF){0};
    VF z = SEL(v < zero, zero - v, v) * 0.70710678118654752f;
    VF t = 1.0f / (1.0f + 0.5f * z);
    VF p = zero + 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    VF half = 0.5f * v * (t * VR(exp)(p - z * z));
    return SEL(v < zero, half, v - half);
}

/* H (m, h) <- gelu(H + b), row by row */
VR_FORM static void VR(gelu_bias)(float *H, const float *b, int m, int h) {
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        for (int u = 0; u < h; u += 16) {
            VF v[NR], c[NR];
            int nv = h - u < 16 ? h - u : 16;
            VR(load)(hr + u, nv, 0.0f, v);
            VR(load)(b + u, nv, 0.0f, c);
            for (int k = 0; k < NR; k++) v[k] = VR(gelu1)(v[k] + c[k]);
            VR(store)(hr + u, nv, v);
        }
    }
}

/* H (m, h) <- silu(H + b1) (H3 + b3): a u / (1 + e^-a) */
VR_FORM static void VR(silu_glu_bias)(float *H, const float *H3, const float *b1, const float *b3, int m,
                                      int h) {
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        const float *h3 = H3 + (size_t)r * h;
        for (int u = 0; u < h; u += 16) {
            VF a[NR], l[NR], c[NR], c3[NR];
            int nv = h - u < 16 ? h - u : 16;
            VR(load)(hr + u, nv, 0.0f, a);
            VR(load)(h3 + u, nv, 0.0f, l);
            VR(load)(b1 + u, nv, 0.0f, c);
            VR(load)(b3 + u, nv, 0.0f, c3);
            for (int k = 0; k < NR; k++) {
                VF av = a[k] + c[k], lv = l[k] + c3[k];
                a[k] = av * lv / (1.0f + VR(exp)((VF){0} - av));
            }
            VR(store)(hr + u, nv, a);
        }
    }
}

VR_FORM static void VR(layernorm)(const float *x, int d, const float *w, const float *b, double eps, float *y) {
    VDN acc[ND];
    for (int k = 0; k < ND; k++) acc[k] = (VDN){0};
    int c = 0;
    for (; c + 16 <= d; c += 16)
        for (int k = 0; k < NR; k++) {
            VDN dv[2];
            VR(to_d)(*(const VF *)(x + c + k * VR_VL), dv);
            acc[2 * k] += dv[0], acc[2 * k + 1] += dv[1];
        }
    double mu = VR(lanes_sum)(acc);
    for (int j = c; j < d; j++) mu += x[j];
    mu /= d;
    const VDN mv = (VDN){0} + mu;
    for (int k = 0; k < ND; k++) acc[k] = (VDN){0};
    for (c = 0; c + 16 <= d; c += 16)
        for (int k = 0; k < NR; k++) {
            VDN dv[2];
            VR(to_d)(*(const VF *)(x + c + k * VR_VL), dv);
            dv[0] -= mv, dv[1] -= mv;
            acc[2 * k] += dv[0] * dv[0], acc[2 * k + 1] += dv[1] * dv[1];
        }
    double var = VR(lanes_sum)(acc);
    for (int j = c; j < d; j++) var += (x[j] - mu) * (x[j] - mu);
    var /= d;
    const double inv = 1.0 / sqrt(var + eps);
    const VDN iv = (VDN){0} + inv;
    for (c = 0; c + 16 <= d; c += 16)
        for (int k = 0; k < NR; k++) {
            const int o = c + k * VR_VL;
            VDN dv[2];
            VR(to_d)(*(const VF *)(x + o), dv);
            const VFH lo = __builtin_convertvector((dv[0] - mv) * iv, VFH);
            const VFH hi = __builtin_convertvector((dv[1] - mv) * iv, VFH);
            const VF q = VR_CAT(lo, hi);
            *(VF *)(y + o) = q * *(const VF *)(w + o) + *(const VF *)(b + o);
        }
    for (int j = c; j < d; j++) y[j] = (float)((x[j] - mu) * inv) * w[j] + b[j];
}

static const vr_ops VR(ops) = {.simd = VR_SIMD, .exp = VR(exp_row), .add = VR(add), .axpy = VR(axpy), .relu_bias = VR(relu_bias),
                               .gelu_bias = VR(gelu_bias), .silu_glu_bias = VR(silu_glu_bias),
                               .softmax = VR(softmax), .logsumexp = VR(logsumexp),
                               .gelu_tanh = VR(gelu_tanh), .layernorm = VR(layernorm)};

#undef VF
#undef VI
#undef VD
#undef VFH
#undef VDN
#undef ND
#undef VR_LO
#undef VR_HI
#undef VR_CAT
#undef NR
#undef SEL
#undef VRI
#undef VR_FORM
#undef EXPC
#undef VR_SCALE
#undef VR
#undef VR_JOIN
#undef VR_JOIN2
