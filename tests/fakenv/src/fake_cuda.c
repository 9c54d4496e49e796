/* A fake libcuda.so.1 (the CUDA driver API) that answers from a host profile.
 *
 * Profile keys used:
 *   [cuda]        driver_version (cuDriverGetVersion, e.g. 12020), device_count,
 *                 behavior = "hang" | "abort" (what cuInit does instead of returning),
 *                 init_latency_ms (how long the first cuInit of a process takes; default 200,
 *                 what cuInit took on the lent H100, driver 580.159.04)
 *   [cuda.errors] <function name> = <CUresult>
 * Codes and names follow cuda.h (CUresult): https://docs.nvidia.com/cuda/cuda-driver-api/
 *
 * CUDA_VISIBLE_DEVICES is applied as the real driver does: entries are read up to the first
 * invalid one (an index out of range, or a GPU- UUID naming no [gpu.N] uuid); none valid ->
 * cuInit returns CUDA_ERROR_NO_DEVICE. UUIDs match in full (case-insensitive): on the measured
 * H100 host (driver 580.159.04) the prefix GPU-09fd4f27 found no device,
 * although the CUDA Programming Guide allows abbreviations.
 */
#include <signal.h>
#include <strings.h>

#include "fake_profile.h"

typedef int CUresult;
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_UNKNOWN = 999,
};

static long physical_count(void) {
    return fk_int("cuda", "device_count", fk_int("nvml", "device_count", 0));
}

static int names_a_gpu(const char *entry, long total) {
    char *end;
    long index = strtol(entry, &end, 10);
    if (*entry && *end == '\0') return index >= 0 && index < total;
    if (strncasecmp(entry, "GPU-", 4) != 0) return 0;
    for (long i = 0; i < total; i++) {
        char section[32], uuid[128];
        snprintf(section, sizeof section, "gpu.%ld", i);
        fk_str(section, "uuid", "", uuid, sizeof uuid);
        if (*uuid && strcasecmp(uuid, entry) == 0) return 1;
    }
    return 0;
}

/* How many devices CUDA_VISIBLE_DEVICES leaves visible (all of them when it is unset). */
static long visible_count(void) {
    long total = physical_count();
    const char *value = getenv("CUDA_VISIBLE_DEVICES");
    if (!value) return total;
    char list[1024];
    snprintf(list, sizeof list, "%s", value);
    long n = 0;
    for (char *save = NULL, *entry = strtok_r(list, ",", &save); entry; entry = strtok_r(NULL, ",", &save)) {
        if (!names_a_gpu(fk_trim(entry), total)) break;
        n++;
    }
    return n;
}

static int g_initialized;

static CUresult enter(const char *name) {
    fk_trace(name);
    if (!fk_has_profile()) return CUDA_ERROR_UNKNOWN;
    return (CUresult)fk_int("cuda.errors", name, 0);
}

/* cuInit(0) alone, on the lent H100: ~0.33 s for `python -c` against 0.08 s for `pass`. */
#define H100_CUINIT_MS 200

EXPORT CUresult cuInit(unsigned int flags) {
    (void)flags;
    CUresult r = enter("cuInit");
    if (!g_initialized && fk_has_profile()) fk_latency("cuda", "init_latency_ms", H100_CUINIT_MS);
    char behavior[32];
    fk_str("cuda", "behavior", "", behavior, sizeof behavior);
    if (strcmp(behavior, "hang") == 0) {
        for (;;) pause(); /* a wedged driver: only the parent's timeout ends this */
    }
    if (strcmp(behavior, "abort") == 0) abort();
    if (r) return r;
    if (getenv("CUDA_VISIBLE_DEVICES") && visible_count() == 0) return CUDA_ERROR_NO_DEVICE;
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
    *count = (int)visible_count();
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
