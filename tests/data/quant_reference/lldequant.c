/* lldequant FILE TENSOR VALUES: the first VALUES values of a GGUF tensor
 * (its first rows, row after row) as llama.cpp's ggml stores and
 * dequantizes them (its type
 * traits' to_float, the function llama.cpp computes with), printed as
 *   type NAME
 *   bytes HEX...            the tensor's first VALUES / block_size blocks
 *   floats HEX HEX ...      each float's IEEE bits, 8 hex digits
 * lldequant quantize TYPE: floats read from stdin (IEEE bits, 8 hex digits
 * each, a whole number of TYPE's blocks) quantized by ggml_quantize_chunk
 * (what llama-quantize calls) as one row, printed as above after a line
 *   input HEX HEX ...       the floats read
 * Built by make.sh against the llama.cpp peer's libggml-base; not part of
 * the kvscope build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

static void print_floats(const char* key, const float* values, int64_t n) {
    printf("%s", key);
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        printf(" %08x", bits);
    }
    printf("\n");
}

static void print_blocks(enum ggml_type type, const void* data, const float* out, int64_t n) {
    printf("type %s\nbytes ", ggml_type_name(type));
    const size_t bytes = ggml_row_size(type, n);
    for (size_t i = 0; i < bytes; ++i)
        printf("%02x", ((const uint8_t*)data)[i]);
    printf("\n");
    print_floats("floats", out, n);
}

static int dequantize_tensor(const char* file, const char* tensor, int64_t n) {
    struct ggml_context* ctx = NULL;
    struct gguf_init_params params = {false, &ctx};
    struct gguf_context* gguf = gguf_init_from_file(file, params);
    if (gguf == NULL) {
        fprintf(stderr, "lldequant: cannot read %s\n", file);
        return 1;
    }
    const struct ggml_tensor* t = ggml_get_tensor(ctx, tensor);
    if (t == NULL || n <= 0 || n > ggml_nelements(t) || n % t->ne[0] != 0) {
        fprintf(stderr, "lldequant: no tensor %s with %lld values in whole rows\n", tensor, (long long)n);
        return 1;
    }
    float* out = malloc(sizeof(float) * (size_t)n);
    if (t->type == GGML_TYPE_F32) /* no to_float: the values as stored */
        memcpy(out, t->data, ggml_row_size(t->type, n));
    else
        ggml_get_type_traits(t->type)->to_float(t->data, out, n);
    print_blocks(t->type, t->data, out, n);
    free(out);
    gguf_free(gguf);
    ggml_free(ctx);
    return 0;
}

static int quantize_stdin(const char* name) {
    enum ggml_type type = GGML_TYPE_COUNT;
    for (int i = 0; i < GGML_TYPE_COUNT; ++i)
        if (ggml_get_type_traits((enum ggml_type)i)->type_name != NULL && strcmp(ggml_type_name((enum ggml_type)i), name) == 0)
            type = (enum ggml_type)i;
    if (type == GGML_TYPE_COUNT || ggml_quantize_requires_imatrix(type)) {
        fprintf(stderr, "lldequant: no type %s quantizable without an importance matrix\n", name);
        return 1;
    }
    size_t n = 0, capacity = 1024;
    float* in = malloc(sizeof(float) * capacity);
    for (unsigned bits; scanf("%8x", &bits) == 1; ++n) {
        if (n == capacity)
            in = realloc(in, sizeof(float) * (capacity *= 2));
        memcpy(&in[n], &bits, sizeof bits);
    }
    if (n == 0 || n % (size_t)ggml_blck_size(type) != 0) {
        fprintf(stderr, "lldequant: %zu values are not whole %s blocks\n", n, name);
        return 1;
    }
    void* data = malloc(ggml_row_size(type, (int64_t)n));
    float* out = malloc(sizeof(float) * n);
    ggml_quantize_chunk(type, in, data, 0, 1, (int64_t)n, NULL);
    ggml_get_type_traits(type)->to_float(data, out, (int64_t)n);
    print_floats("input", in, (int64_t)n);
    print_blocks(type, data, out, (int64_t)n);
    free(in);
    free(data);
    free(out);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "quantize") == 0)
        return quantize_stdin(argv[2]);
    if (argc == 4)
        return dequantize_tensor(argv[1], argv[2], atoll(argv[3]));
    fprintf(stderr, "usage: lldequant FILE TENSOR VALUES | lldequant quantize TYPE < hex floats\n");
    return 2;
}
