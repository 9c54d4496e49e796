/* A fake CUDA forward-compatibility libcuda (the cuda-compat package's
 * /usr/local/cuda/compat/libcuda.so.<driver>): the fake libcuda of fake_cuda.c plus the ELF note
 * `.note.cuda.fwd_compatibility` that NVIDIA writes into the real one, laid out as an ELF note
 * (namesz, descsz, type, the name padded to 4 bytes, then the description): the name
 * "NVIDIA Corporation", the description a JSON object such as
 *   {"Format": 1, "CUDA Version": "13.1", "Driver": [535, 550, 570, 575, 580, 590],
 *    "Device": [1, 2, 7, 8, 9, 10, 11, 12, 13, 14]}
 * given at build time as -DFAKE_COMPAT_NOTE="<the JSON as a C string>". The assembler makes a
 * section whose name starts with .note a SHT_NOTE section, as the toolkit requires
 * (NVIDIA/nvidia-container-toolkit cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header.go, which does
 * not read the note's type).
 */
#include "fake_cuda.c"
#include <stdint.h>

#ifndef FAKE_COMPAT_NOTE
#error "FAKE_COMPAT_NOTE (the note's JSON) is required"
#endif

#define NOTE_NAME "NVIDIA Corporation"

__attribute__((section(".note.cuda.fwd_compatibility"), used, aligned(4)))
static const struct {
    uint32_t namesz, descsz, type;
    char name[(sizeof NOTE_NAME + 3) & ~3u];
    char desc[(sizeof FAKE_COMPAT_NOTE + 3) & ~3u];
} fwd_compatibility_note = {
    sizeof NOTE_NAME, /* with its terminating NUL, as ELF notes count it */
    sizeof FAKE_COMPAT_NOTE,
    1,
    NOTE_NAME,
    FAKE_COMPAT_NOTE,
};
