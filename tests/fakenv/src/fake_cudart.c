/* A fake libcudart.so.<major>: only cudaRuntimeGetVersion, which the real runtime answers
 * without a driver. The version belongs to the file, so it is fixed at build time:
 *   gcc -DFAKE_CUDART_VERSION=12060 -shared -fPIC -Wl,-soname,libcudart.so.12 ...
 * https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART____VERSION.html
 */
#include "fake_profile.h"

#ifndef FAKE_CUDART_VERSION
#error "build with -DFAKE_CUDART_VERSION=<1000*major + 10*minor>"
#endif

EXPORT int cudaRuntimeGetVersion(int *version) {
    fk_trace("cudaRuntimeGetVersion");
    if (!version) return 1; /* cudaErrorInvalidValue */
    *version = FAKE_CUDART_VERSION;
    return 0;
}
