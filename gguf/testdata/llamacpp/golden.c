// Generates reference vectors from llama.cpp's own (de)quantization routines.
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*dq_fn)(const void *, float *, int64_t);
typedef void (*q_fn)(const float *, void *, int64_t);
typedef uint16_t (*f2h_fn)(float);

static uint64_t s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)(s >> 32); }
static float gauss(void) {
  double u1 = (rnd() + 1.0) / 4294967297.0, u2 = rnd() / 4294967296.0;
  return (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

struct t { const char *name; int be, bb; int f16[2]; };

int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  f2h_fn f2h = (f2h_fn)dlsym(h, "ggml_fp32_to_fp16");
  struct t types[] = {
    {"q4_0", 32, 18, {0, -1}}, {"q4_1", 32, 20, {0, 2}}, {"q5_0", 32, 22, {0, -1}},
    {"q5_1", 32, 24, {0, 2}}, {"q8_0", 32, 34, {0, -1}}, {"q4_K", 256, 144, {0, 2}},
    {"q6_K", 256, 210, {208, -1}},
  };
  const int nq = 8, nr = 8; // blocks from the quantizer, blocks of random bytes
  for (int ti = 0; ti < 7; ti++) {
    struct t *T = &types[ti];
    char sym[64];
    snprintf(sym, sizeof sym, "dequantize_row_%s", T->name);
    dq_fn dq = (dq_fn)dlsym(h, sym);
    snprintf(sym, sizeof sym, "quantize_row_%s_ref", T->name);
    q_fn q = (q_fn)dlsym(h, sym);
    if (!dq || !q) { fprintf(stderr, "missing %s\n", sym); return 1; }
    int nb = nq + nr, n = nb * T->be;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    uint8_t *b = malloc((size_t)nb * T->bb);
    for (int i = 0; i < nq * T->be; i++) {
      float scale = (i / T->be) % 2 ? 0.02f : 3.0f;
      x[i] = gauss() * scale + ((i / T->be) % 3 == 2 ? 0.5f : 0.0f);
    }
    q(x, b, (int64_t)nq * T->be);
    for (int i = nq * T->bb; i < nb * T->bb; i++) b[i] = (uint8_t)rnd();
    for (int k = nq; k < nb; k++)
      for (int f = 0; f < 2; f++)
        if (T->f16[f] >= 0) {
          uint16_t v = f2h((rnd() / 4294967296.0f - 0.5f) * 4.0f);
          memcpy(b + (size_t)k * T->bb + T->f16[f], &v, 2);
        }
    dq(b, y, n);
    snprintf(sym, sizeof sym, "%s/%s.golden", argv[2], T->name);
    FILE *o = fopen(sym, "wb");
    fwrite(b, 1, (size_t)nb * T->bb, o);
    fwrite(y, sizeof(float), n, o);
    fclose(o);
    if (ti == 4) { // Q8_0: the quantizer's input and output too
      snprintf(sym, sizeof sym, "%s/q8_0_quantize.golden", argv[2]);
      o = fopen(sym, "wb");
      fwrite(x, sizeof(float), nq * T->be, o);
      fwrite(b, 1, (size_t)nq * T->bb, o);
      fclose(o);
    }
    free(x); free(y); free(b);
  }
  return 0;
}
