/* A fake libcudnn.so.<major>: cudnnGetVersion / cudnnGetCudartVersion, fixed at build time.
 * cuDNN 8 encodes 1000*major + 100*minor + patch (8906), cuDNN 9 10000*major + … (90501):
 * https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html#cudnngetversion
 */
#include <stddef.h>

#include "fake_profile.h"

#ifndef FAKE_CUDNN_VERSION
#error "build with -DFAKE_CUDNN_VERSION=<cudnnGetVersion() value>"
#endif
#ifndef FAKE_CUDNN_CUDART_VERSION
#define FAKE_CUDNN_CUDART_VERSION 12000
#endif

EXPORT size_t cudnnGetVersion(void) {
    fk_trace("cudnnGetVersion");
    return FAKE_CUDNN_VERSION;
}

EXPORT size_t cudnnGetCudartVersion(void) {
    fk_trace("cudnnGetCudartVersion");
    return FAKE_CUDNN_CUDART_VERSION;
}
