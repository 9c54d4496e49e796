/* A fake libnvidia-ml.so.1 that answers from a host profile (see fake_profile.h).
 *
 * It exports exactly the symbols nvidia-ml-py (pynvml) resolves for the calls envcheck makes,
 * under both the old and the new names pynvml has used (nvmlInit_v2 / nvmlInitWithFlags, …).
 * Built with -DFAKE_NVML_LEGACY it lacks nvmlDeviceGetComputeRunningProcesses_v3 and
 * nvmlDeviceGetMemoryInfo_v2, like drivers older than R510.
 *
 * Profile keys used:
 *   [nvml]        driver_version, nvml_version, cuda_driver_version, device_count,
 *                 init_latency_ms (how long the first nvmlInit of a process takes; default 0)
 *   [nvml.errors] <function name> = <nvmlReturn_t>   (every call first returns this if set;
 *                 `nvmlInit` covers nvmlInit, nvmlInit_v2 and nvmlInitWithFlags)
 *   [gpu.N]       name, uuid, cc_major, cc_minor, memory_total_mib, memory_used_mib,
 *                 mig_current, mig_pending (absent = MIG not supported), mig_max, mig_devices,
 *                 processes, util_gpu (absent: utilisation NOT_SUPPORTED),
 *                 process_sm_util (each process's SM %; absent: per-process utilisation
 *                 NOT_SUPPORTED)
 * Return codes and signatures follow nvml.h: https://docs.nvidia.com/deploy/nvml-api/
 */
#include "fake_profile.h"
#include <sys/time.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_UNKNOWN = 999,
};

#define MAX_GPUS 16
#define MAX_MIG 8

struct fake_device { int index; int mig_index; };
typedef struct fake_device *nvmlDevice_t;

static struct fake_device g_devices[MAX_GPUS];
static struct fake_device g_mig_devices[MAX_GPUS][MAX_MIG];
static int g_init_count;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* Trace the call, then return the error the profile injects for it (0 = none). */
static nvmlReturn_t enter(const char *name) {
    fk_trace(name);
    if (!fk_has_profile()) return NVML_ERROR_UNKNOWN;
    return (nvmlReturn_t)fk_int("nvml.errors", name, 0);
}

#define ENTER(name)                                   \
    do {                                              \
        nvmlReturn_t injected_ = enter(name);         \
        if (injected_) return injected_;              \
        if (!g_init_count) return NVML_ERROR_UNINITIALIZED; \
    } while (0)

static int device_count(void) {
    long n = fk_int("nvml", "device_count", 0);
    return n < 0 ? 0 : (n > MAX_GPUS ? MAX_GPUS : (int)n);
}

static int gpu_of(nvmlDevice_t dev, char *section, size_t n) {
    if (!dev || dev->index < 0 || dev->index >= device_count()) return 0;
    snprintf(section, n, "gpu.%d", dev->index);
    return 1;
}

#define GPU_SECTION(dev, section)                                        \
    char section[32];                                                    \
    if (!gpu_of(dev, section, sizeof section)) return NVML_ERROR_INVALID_ARGUMENT

static nvmlReturn_t do_init(const char *name) {
    fk_trace(name);
    if (!fk_has_profile()) return NVML_ERROR_UNKNOWN;
    if (g_init_count == 0) fk_latency("nvml", "init_latency_ms", 0); /* later inits: a count */
    nvmlReturn_t r = (nvmlReturn_t)fk_int("nvml.errors", "nvmlInit", 0);
    if (r) return r;
    g_init_count++;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit_v1"); }
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return do_init("nvmlInitWithFlags"); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
    ENTER("nvmlShutdown");
    g_init_count--;
    return NVML_SUCCESS;
}

/* The strings real NVML returns (nvidia-smi prints them). */
EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 18: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    ENTER("nvmlSystemGetDriverVersion");
    char value[80];
    fk_str("nvml", "driver_version", "", value, sizeof value);
    return fk_copy_out(value, version, length);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    ENTER("nvmlSystemGetNVMLVersion");
    char value[80];
    fk_str("nvml", "nvml_version", "", value, sizeof value);
    return fk_copy_out(value, version, length);
}

static nvmlReturn_t cuda_driver_version(const char *name, int *out) {
    ENTER(name);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = (int)fk_int("nvml", "cuda_driver_version", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    return cuda_driver_version("nvmlSystemGetCudaDriverVersion", v);
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    return cuda_driver_version("nvmlSystemGetCudaDriverVersion_v2", v);
}

static nvmlReturn_t get_count(const char *name, unsigned int *count) {
    ENTER(name);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)device_count();
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *c) { return get_count("nvmlDeviceGetCount", c); }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { return get_count("nvmlDeviceGetCount_v2", c); }

static nvmlReturn_t get_handle(const char *name, unsigned int index, nvmlDevice_t *device) {
    ENTER(name);
    if (!device || index >= (unsigned int)device_count()) return NVML_ERROR_INVALID_ARGUMENT;
    g_devices[index].index = (int)index;
    g_devices[index].mig_index = -1;
    *device = &g_devices[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) {
    return get_handle("nvmlDeviceGetHandleByIndex", i, d);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    return get_handle("nvmlDeviceGetHandleByIndex_v2", i, d);
}

static nvmlReturn_t get_string(const char *name, nvmlDevice_t dev, const char *key, char *buf,
                               unsigned int len) {
    ENTER(name);
    GPU_SECTION(dev, section);
    char value[128];
    if (!fk_lookup(section, key, value, sizeof value)) return NVML_ERROR_NOT_SUPPORTED;
    return fk_copy_out(value, buf, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
    return get_string("nvmlDeviceGetName", dev, "name", name, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
    return get_string("nvmlDeviceGetUUID", dev, "uuid", uuid, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
    ENTER("nvmlDeviceGetCudaComputeCapability");
    GPU_SECTION(dev, section);
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = (int)fk_int(section, "cc_major", 0);
    *minor = (int)fk_int(section, "cc_minor", 0);
    return NVML_SUCCESS;
}

static void memory_of(const char *section, unsigned long long *total, unsigned long long *used) {
    *total = (unsigned long long)fk_int(section, "memory_total_mib", 0) << 20;
    *used = (unsigned long long)fk_int(section, "memory_used_mib", 0) << 20;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *memory) {
    ENTER("nvmlDeviceGetMemoryInfo");
    GPU_SECTION(dev, section);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory_of(section, &memory->total, &memory->used);
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *memory) {
    ENTER("nvmlDeviceGetMemoryInfo_v2");
    GPU_SECTION(dev, section);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory_of(section, &memory->total, &memory->used);
    memory->reserved = 0;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}
#endif

/* MIG exists only where the profile says so (A100/H100); elsewhere NVML says NOT_SUPPORTED. */
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    ENTER("nvmlDeviceGetMigMode");
    GPU_SECTION(dev, section);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_has(section, "mig_current")) return NVML_ERROR_NOT_SUPPORTED;
    *current = (unsigned int)fk_int(section, "mig_current", 0);
    *pending = (unsigned int)fk_int(section, "mig_pending", (long)*current);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count) {
    ENTER("nvmlDeviceGetMaxMigDeviceCount");
    GPU_SECTION(dev, section);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_has(section, "mig_current")) return NVML_ERROR_NOT_SUPPORTED;
    *count = (unsigned int)fk_int(section, "mig_max", 7);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index,
                                                        nvmlDevice_t *mig) {
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex");
    GPU_SECTION(dev, section);
    if (!mig || index >= MAX_MIG) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_int(section, "mig_current", 0)) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= (unsigned int)fk_int(section, "mig_devices", 0)) return NVML_ERROR_NOT_FOUND;
    g_mig_devices[dev->index][index].index = dev->index;
    g_mig_devices[dev->index][index].mig_index = (int)index;
    *mig = &g_mig_devices[dev->index][index];
    return NVML_SUCCESS;
}

/* The two-call protocol of nvmlDeviceGetComputeRunningProcesses*: size first, then fill. */
static nvmlReturn_t running_processes(const char *name, nvmlDevice_t dev, unsigned int *count,
                                      void *infos, size_t entry_size) {
    ENTER(name);
    GPU_SECTION(dev, section);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = (unsigned int)fk_int(section, "processes", 0);
    if (n == 0) { *count = 0; return NVML_SUCCESS; }
    if (!infos || *count < n) { *count = n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    memset(infos, 0, entry_size * n);
    for (unsigned int i = 0; i < n; i++) {
        nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)((char *)infos + i * entry_size);
        p->pid = 4242 + i;
        p->usedGpuMemory = 1ULL << 30;
        if (entry_size >= sizeof(nvmlProcessInfo_v2_t)) {
            ((nvmlProcessInfo_v2_t *)p)->gpuInstanceId = 0xFFFFFFFFu;
            ((nvmlProcessInfo_v2_t *)p)->computeInstanceId = 0xFFFFFFFFu;
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *c, void *i) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses", d, c, i,
                             sizeof(nvmlProcessInfo_v1_t));
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, void *i) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v2", d, c, i,
                             sizeof(nvmlProcessInfo_v2_t));
}
#ifndef FAKE_NVML_LEGACY
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, void *i) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v3", d, c, i,
                             sizeof(nvmlProcessInfo_v2_t));
}
#endif

/* nvmlDeviceGetUtilizationRates: the GPU's busy percentage over the last sample period. */
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util) {
    ENTER("nvmlDeviceGetUtilizationRates");
    GPU_SECTION(dev, section);
    long gpu = fk_int(section, "util_gpu", -1);
    if (gpu < 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!util) return NVML_ERROR_INVALID_ARGUMENT;
    util->gpu = (unsigned int)gpu;
    util->memory = 0;
    return NVML_SUCCESS;
}

/* nvmlDeviceGetProcessUtilization: one sample per process (pids as in running_processes),
 * stamped now in microseconds since the epoch; two-call protocol (NULL first for the size). */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev,
                                                    nvmlProcessUtilizationSample_t *samples,
                                                    unsigned int *count,
                                                    unsigned long long last_seen) {
    ENTER("nvmlDeviceGetProcessUtilization");
    GPU_SECTION(dev, section);
    (void)last_seen;
    long sm = fk_int(section, "process_sm_util", -1);
    if (sm < 0) return NVML_ERROR_NOT_SUPPORTED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = (unsigned int)fk_int(section, "processes", 0);
    if (n == 0) return NVML_ERROR_NOT_FOUND; /* no process ran since last_seen */
    if (!samples || *count < n) { *count = n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    struct timeval now;
    gettimeofday(&now, NULL);
    for (unsigned int i = 0; i < n; i++) {
        memset(&samples[i], 0, sizeof samples[i]);
        samples[i].pid = 4242 + i;
        samples[i].timeStamp = (unsigned long long)now.tv_sec * 1000000ULL + now.tv_usec;
        samples[i].smUtil = (unsigned int)sm;
    }
    *count = n;
    return NVML_SUCCESS;
}

/* The health queries (row remapping, page retirement, ECC, recovery action). */
#include "fake_nvml_health.c"
