/* libcublas.so.12 -> libcublas.so.13: the 8 cuBLAS entry points libfaiss (faiss-gpu 1.15.1) imports, each a jump
   to the same function of the image's cuBLAS 13 (transport for one benchmark run; not part of embedselect). */
#include <dlfcn.h>
#include <stdio.h>
void *shim_fn[8] __attribute__((visibility("hidden")));
static const char *names[8] = {"cublasCreate_v2", "cublasDestroy_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx",
                               "cublasGetMathMode", "cublasSetMathMode", "cublasSetStream_v2", "cublasSgemmEx"};
__attribute__((constructor)) static void shim_init(void) {
  void *h = dlopen(CUBLAS13, RTLD_NOW | RTLD_GLOBAL);
  if (!h) { fprintf(stderr, "cublas shim: %s\n", dlerror()); return; }
  for (int i = 0; i < 8; i++)
    if (!(shim_fn[i] = dlsym(h, names[i]))) fprintf(stderr, "cublas shim: no %s in %s\n", names[i], CUBLAS13);
}
#define JMP(i, name) __asm__(".globl " #name "\n.type " #name ",@function\n" #name ":\n jmp *shim_fn+" #i "*8(%rip)\n");
JMP(0, cublasCreate_v2) JMP(1, cublasDestroy_v2) JMP(2, cublasGemmEx) JMP(3, cublasGemmStridedBatchedEx)
JMP(4, cublasGetMathMode) JMP(5, cublasSetMathMode) JMP(6, cublasSetStream_v2) JMP(7, cublasSgemmEx)
