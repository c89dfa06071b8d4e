// The C interface of the emulator, for cgo.
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int emu_kernel_count(void);
const char *emu_kernel_name(int i);
int emu_launch(const char *name, const unsigned *dims, const uint64_t *args, int nargs, char *err, int errlen);
#ifdef __cplusplus
}
#endif
