// rocm-fleet HIP probe: on every GPU, z = a*x + y over n floats, then a block reduction of z,
// both checked against a host reference. Inputs are small integers, so every element and the
// total are exact in float/double: any difference at all is an error.
//
// Output, one line per GPU and one summary line (parsed by validation/probes/hip_probe.py):
//   RF_HIP gpu=0 name="..." arch=gfx942 n=16777216 result=ok max_abs_err=0 sum_err=0 ms=0.123
//   RF_HIP gpu=1 result=error step=hipMalloc error="out of memory"
//   RF_HIP_SUMMARY platform=hip devices=2 ok=1 failed=1
// Exit code: 0 all GPUs ok, 1 a GPU failed, 2 no GPU (or the runtime could not count them).
// Usage: rf_probe [n]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rf_hip_compat.h"

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;
constexpr int kTimedLaunches = 10;
constexpr float kA = 2.0f;

__global__ void fma_kernel(const float* x, const float* y, float* z, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        z[i] = a * x[i] + y[i];
    }
}

__global__ void block_sum_kernel(const float* z, double* partial, int n) {
    __shared__ double cache[kThreads];
    double acc = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        acc += z[i];
    }
    cache[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (static_cast<int>(threadIdx.x) < s) {
            cache[threadIdx.x] += cache[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = cache[0];
    }
}

// Device memory that frees itself on every return path.
struct DeviceBuffer {
    void* ptr = nullptr;
    ~DeviceBuffer() {
        if (ptr != nullptr) {
            (void)hipFree(ptr);
        }
    }
};

static bool ok_or_report(hipError_t err, int gpu, const char* step) {
    if (err == hipSuccess) {
        return true;
    }
    printf("RF_HIP gpu=%d result=error step=%s error=\"%s\"\n", gpu, step, hipGetErrorString(err));
    return false;
}

#define RF_TRY(gpu, step, call)                 \
    do {                                        \
        if (!ok_or_report((call), (gpu), (step))) \
            return false;                       \
    } while (0)

static void sanitize(char* text) {
    for (char* c = text; *c != '\0'; ++c) {
        if (*c == '"' || *c == '\n') {
            *c = '\'';
        }
    }
}

static bool probe_gpu(int gpu, int n) {
    RF_TRY(gpu, "hipSetDevice", hipSetDevice(gpu));
    hipDeviceProp_t prop;
    RF_TRY(gpu, "hipGetDeviceProperties", hipGetDeviceProperties(&prop, gpu));
    char arch[128];
    rf_arch_name(prop, arch, sizeof(arch));
    sanitize(prop.name);
    sanitize(arch);

    std::vector<float> x(n), y(n), z(n);
    std::vector<float> expected(n);
    double expected_sum = 0.0;
    for (int i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 7);
        y[i] = static_cast<float>(i % 5);
        expected[i] = kA * x[i] + y[i];
        expected_sum += expected[i];
    }
    const int blocks = (n + kThreads - 1) / kThreads < kMaxBlocks ? (n + kThreads - 1) / kThreads : kMaxBlocks;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    DeviceBuffer dx, dy, dz, dpartial;
    RF_TRY(gpu, "hipMalloc", hipMalloc(&dx.ptr, bytes));
    RF_TRY(gpu, "hipMalloc", hipMalloc(&dy.ptr, bytes));
    RF_TRY(gpu, "hipMalloc", hipMalloc(&dz.ptr, bytes));
    RF_TRY(gpu, "hipMalloc", hipMalloc(&dpartial.ptr, blocks * sizeof(double)));
    RF_TRY(gpu, "hipMemcpy", hipMemcpy(dx.ptr, x.data(), bytes, hipMemcpyHostToDevice));
    RF_TRY(gpu, "hipMemcpy", hipMemcpy(dy.ptr, y.data(), bytes, hipMemcpyHostToDevice));

    const float* px = static_cast<const float*>(dx.ptr);
    const float* py = static_cast<const float*>(dy.ptr);
    float* pz = static_cast<float*>(dz.ptr);
    double* ppartial = static_cast<double*>(dpartial.ptr);

    hipLaunchKernelGGL(fma_kernel, dim3(blocks), dim3(kThreads), 0, 0, px, py, pz, kA, n);  // warm-up
    RF_TRY(gpu, "fma_kernel", hipGetLastError());
    RF_TRY(gpu, "hipDeviceSynchronize", hipDeviceSynchronize());

    hipEvent_t start, stop;
    RF_TRY(gpu, "hipEventCreate", hipEventCreate(&start));
    RF_TRY(gpu, "hipEventCreate", hipEventCreate(&stop));
    RF_TRY(gpu, "hipEventRecord", hipEventRecord(start, 0));
    for (int i = 0; i < kTimedLaunches; ++i) {
        hipLaunchKernelGGL(fma_kernel, dim3(blocks), dim3(kThreads), 0, 0, px, py, pz, kA, n);
    }
    RF_TRY(gpu, "hipEventRecord", hipEventRecord(stop, 0));
    RF_TRY(gpu, "hipEventSynchronize", hipEventSynchronize(stop));
    float total_ms = 0.0f;
    RF_TRY(gpu, "hipEventElapsedTime", hipEventElapsedTime(&total_ms, start, stop));
    (void)hipEventDestroy(start);
    (void)hipEventDestroy(stop);

    hipLaunchKernelGGL(block_sum_kernel, dim3(blocks), dim3(kThreads), 0, 0, pz, ppartial, n);
    RF_TRY(gpu, "block_sum_kernel", hipGetLastError());
    std::vector<double> partial(blocks);
    RF_TRY(gpu, "hipMemcpy", hipMemcpy(z.data(), dz.ptr, bytes, hipMemcpyDeviceToHost));
    RF_TRY(gpu, "hipMemcpy", hipMemcpy(partial.data(), dpartial.ptr, blocks * sizeof(double),
                                        hipMemcpyDeviceToHost));

    double max_abs_err = 0.0;
    for (int i = 0; i < n; ++i) {
        max_abs_err = std::fmax(max_abs_err, std::fabs(static_cast<double>(z[i]) - expected[i]));
    }
    double sum = 0.0;
    for (int b = 0; b < blocks; ++b) {
        sum += partial[b];
    }
    const double sum_err = std::fabs(sum - expected_sum);
    const bool ok = max_abs_err == 0.0 && sum_err == 0.0;
    printf("RF_HIP gpu=%d name=\"%s\" arch=%s n=%d result=%s max_abs_err=%.17g sum_err=%.17g ms=%.6f\n", gpu,
           prop.name, arch, n, ok ? "ok" : "fail", max_abs_err, sum_err, total_ms / kTimedLaunches);
    return ok;
}

int main(int argc, char** argv) {
    int n = 1 << 24;
    if (argc > 1) {
        n = atoi(argv[1]);
        if (n <= 0) {
            fprintf(stderr, "usage: %s [n > 0]\n", argv[0]);
            return 64;
        }
    }
    int devices = 0;
    hipError_t err = hipGetDeviceCount(&devices);
    if (err != hipSuccess || devices == 0) {
        printf("RF_HIP_SUMMARY platform=%s devices=0 ok=0 failed=0 error=\"%s\"\n", RF_HIP_PLATFORM,
               err != hipSuccess ? hipGetErrorString(err) : "no GPU visible");
        return 2;
    }
    int ok = 0;
    for (int gpu = 0; gpu < devices; ++gpu) {
        if (probe_gpu(gpu, n)) {
            ++ok;
        }
        fflush(stdout);
    }
    printf("RF_HIP_SUMMARY platform=%s devices=%d ok=%d failed=%d\n", RF_HIP_PLATFORM, devices, ok, devices - ok);
    return ok == devices ? 0 : 1;
}
