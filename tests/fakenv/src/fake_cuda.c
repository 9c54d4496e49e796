/* A fake libcuda.so.1 (the CUDA driver API) that answers from a host profile.
 *
 * Profile keys used:
 *   [cuda]        driver_version (cuDriverGetVersion, e.g. 12020), device_count,
 *                 behavior = "hang" | "abort" (what cuInit does instead of returning)
 *   [cuda.errors] <function name> = <CUresult>
 * Codes and names follow cuda.h (CUresult): https://docs.nvidia.com/cuda/cuda-driver-api/
 */
#include <signal.h>

#include "fake_profile.h"

typedef int CUresult;
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_UNKNOWN = 999,
};

static int g_initialized;

static CUresult enter(const char *name) {
    fk_trace(name);
    if (!fk_has_profile()) return CUDA_ERROR_UNKNOWN;
    return (CUresult)fk_int("cuda.errors", name, 0);
}

EXPORT CUresult cuInit(unsigned int flags) {
    (void)flags;
    CUresult r = enter("cuInit");
    char behavior[32];
    fk_str("cuda", "behavior", "", behavior, sizeof behavior);
    if (strcmp(behavior, "hang") == 0) {
        for (;;) pause(); /* a wedged driver: only the parent's timeout ends this */
    }
    if (strcmp(behavior, "abort") == 0) abort();
    if (r) return r;
    g_initialized = 1;
    return CUDA_SUCCESS;
}

/* Like the real driver, this one answers before cuInit. */
EXPORT CUresult cuDriverGetVersion(int *version) {
    CUresult r = enter("cuDriverGetVersion");
    if (r) return r;
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = (int)fk_int("cuda", "driver_version", 0);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    CUresult r = enter("cuDeviceGetCount");
    if (r) return r;
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = (int)fk_int("cuda", "device_count", fk_int("nvml", "device_count", 0));
    return CUDA_SUCCESS;
}

static const char *name_of(CUresult error) {
    switch (error) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return NULL;
    }
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **out) {
    fk_trace("cuGetErrorName");
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    *out = name_of(error);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
