/* lldequant FILE TENSOR VALUES: the first VALUES values of a GGUF tensor
 * (its first rows, row after row) as llama.cpp's ggml stores and
 * dequantizes them (its type
 * traits' to_float, the function llama.cpp computes with), printed as
 *   type NAME
 *   bytes HEX...            the tensor's first VALUES / block_size blocks
 *   floats HEX HEX ...      each float's IEEE bits, 8 hex digits
 * Built by make.sh against the llama.cpp peer's libggml-base; not part of
 * the kvscope build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: lldequant FILE TENSOR VALUES\n");
        return 2;
    }
    const int64_t n = atoll(argv[3]);
    struct ggml_context* ctx = NULL;
    struct gguf_init_params params = {false, &ctx};
    struct gguf_context* gguf = gguf_init_from_file(argv[1], params);
    if (gguf == NULL) {
        fprintf(stderr, "lldequant: cannot read %s\n", argv[1]);
        return 1;
    }
    const struct ggml_tensor* t = ggml_get_tensor(ctx, argv[2]);
    if (t == NULL || n <= 0 || n > ggml_nelements(t) || n % t->ne[0] != 0) {
        fprintf(stderr, "lldequant: no tensor %s with %lld values in whole rows\n", argv[2], (long long)n);
        return 1;
    }
    const size_t bytes = ggml_row_size(t->type, n);
    float* out = malloc(sizeof(float) * (size_t)n);
    if (t->type == GGML_TYPE_F32) /* no to_float: the values as stored */
        memcpy(out, t->data, bytes);
    else
        ggml_get_type_traits(t->type)->to_float(t->data, out, n);
    printf("type %s\nbytes ", ggml_type_name(t->type));
    for (size_t i = 0; i < bytes; ++i)
        printf("%02x", ((const uint8_t*)t->data)[i]);
    printf("\nfloats");
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &out[i], sizeof bits);
        printf(" %08x", bits);
    }
    printf("\n");
    free(out);
    gguf_free(gguf);
    ggml_free(ctx);
    return 0;
}
