// rocm-fleet's own HIP <-> CUDA portability header.
//
// rf_probe.hip is written against the HIP runtime API only. Built by hipcc (AMD, or HIP on
// NVIDIA) it gets the real HIP headers; built directly by nvcc (`nvcc -x cu`) the few hip*
// names it uses are mapped to their CUDA runtime equivalents here. Add a name here before
// using it in the probe source; keep the probe free of cuda* and of AMD-only intrinsics.
#ifndef RF_HIP_COMPAT_H
#define RF_HIP_COMPAT_H

#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__) && \
    !defined(__HIPCC__)

#include <cuda_runtime.h>

#define RF_HIP_PLATFORM "cuda"

#include <cstdio>

// Architecture name as the platform spells it ("sm_90").
static inline void rf_arch_name(const cudaDeviceProp& prop, char* out, int size) {
    snprintf(out, size, "sm_%d%d", prop.major, prop.minor);
}

typedef cudaError_t hipError_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaStream_t hipStream_t;

#define hipSuccess cudaSuccess
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost

#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipGetLastError cudaGetLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime

// hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, args...)
#define hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, ...) \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)

#else

#include <hip/hip_runtime.h>

#define RF_HIP_PLATFORM "hip"

#include <cstdio>

// Architecture name as the platform spells it ("gfx942:sramecc+:xnack-" on AMD).
static inline void rf_arch_name(const hipDeviceProp_t& prop, char* out, int size) {
#if defined(__HIP_PLATFORM_AMD__)
    snprintf(out, size, "%s", prop.gcnArchName);
#else
    snprintf(out, size, "sm_%d%d", prop.major, prop.minor);
#endif
}

#endif

#endif  // RF_HIP_COMPAT_H
