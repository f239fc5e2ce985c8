// Device query plus a vector add checked against the CPU: the CUDA program that
// tests/gpu/check.sh runs in a container on a real GPU.
#include <cstdio>
#include <vector>

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err = (call);                                                    \
    if (err != cudaSuccess) {                                                    \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorString(err));              \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, d));
    std::printf("device %d: %s, compute %d.%d\n", d, prop.name, prop.major, prop.minor);
  }
  const int n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) { a[i] = float(i); b[i] = float(2 * i); }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i]) {
      std::printf("FAIL element %d: %f != %f\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  std::printf("vector add OK\n");
  return 0;
}
