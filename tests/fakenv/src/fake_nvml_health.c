/* The GPU health queries of the fake libnvidia-ml.so.1, included by fake_nvml.c (it shares that
 * file's ENTER / GPU_SECTION and the profile helpers). What `nvidia-smi -q -d
 * ROW_REMAPPER,PAGE_RETIREMENT,ECC` prints, and the driver's recovery action.
 *
 * Profile keys of [gpu.N] (each absent key makes its query answer NOT_SUPPORTED, as a GeForce
 * GPU or a GPU without ECC does):
 *   remap_pending, remap_failure,        nvmlDeviceGetRemappedRows (A100 and newer)
 *   remap_corrected, remap_uncorrected   (remap_pending present = the query is supported)
 *   pages_pending                        nvmlDeviceGetRetiredPagesPendingStatus (older GPUs)
 *   ecc_mode                             nvmlDeviceGetEccMode (current = pending = the value)
 *   ecc_volatile_uncorrected             nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)
 *   recovery_action                      the field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230)
 *                                        of nvmlDeviceGetFieldValues (R570 and newer drivers)
 * Signatures follow nvml.h: https://docs.nvidia.com/deploy/nvml-api/
 */

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corrected,
                                              unsigned int *uncorrected, unsigned int *pending,
                                              unsigned int *failure) {
    ENTER("nvmlDeviceGetRemappedRows");
    GPU_SECTION(dev, section);
    if (!corrected || !uncorrected || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_has(section, "remap_pending")) return NVML_ERROR_NOT_SUPPORTED;
    *corrected = (unsigned int)fk_int(section, "remap_corrected", 0);
    *uncorrected = (unsigned int)fk_int(section, "remap_uncorrected", 0);
    *pending = (unsigned int)fk_int(section, "remap_pending", 0);
    *failure = (unsigned int)fk_int(section, "remap_failure", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, unsigned int *pending) {
    ENTER("nvmlDeviceGetRetiredPagesPendingStatus");
    GPU_SECTION(dev, section);
    if (!pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_has(section, "pages_pending")) return NVML_ERROR_NOT_SUPPORTED;
    *pending = (unsigned int)fk_int(section, "pages_pending", 0);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    ENTER("nvmlDeviceGetEccMode");
    GPU_SECTION(dev, section);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_has(section, "ecc_mode")) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = (unsigned int)fk_int(section, "ecc_mode", 0);
    return NVML_SUCCESS;
}

enum { NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0 };

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type, int counter_type,
                                                unsigned long long *count) {
    ENTER("nvmlDeviceGetTotalEccErrors");
    GPU_SECTION(dev, section);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    if (!fk_int(section, "ecc_mode", 0)) return NVML_ERROR_NOT_SUPPORTED; /* no ECC, no counters */
    int volatile_uncorrected =
        error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED && counter_type == NVML_VOLATILE_ECC;
    *count = volatile_uncorrected ? (unsigned long long)fk_int(section, "ecc_volatile_uncorrected", 0) : 0;
    return NVML_SUCCESS;
}

/* nvmlFieldValue_t as nvml.h lays it out; each field answers its own nvmlReturn. */
typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
enum { NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230, NVML_VALUE_TYPE_UNSIGNED_INT = 1 };

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvmlFieldValue_t *values) {
    ENTER("nvmlDeviceGetFieldValues");
    GPU_SECTION(dev, section);
    if (count < 0 || (count && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = 0;
        v->latencyUsec = 0;
        if (v->fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && fk_has(section, "recovery_action")) {
            v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            v->value.ullVal = 0;
            v->value.uiVal = (unsigned int)fk_int(section, "recovery_action", 0);
            v->nvmlReturn = NVML_SUCCESS;
        } else {
            v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED; /* a field this GPU or driver lacks */
        }
    }
    return NVML_SUCCESS;
}
