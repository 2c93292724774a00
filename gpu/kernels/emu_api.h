// emu_api.h: the C interface of the kernel emulator (emu.cc) to Go (emu.go).
#ifndef RELABEL_EMU_API_H
#define RELABEL_EMU_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// relabel_emu_launch runs kernel name over the grid with the given block shape
// and dynamic shared memory; args holds one 8-byte slot per kernel parameter.
// It returns 0, 1 for an unknown kernel, 2 for a bad block shape.
int relabel_emu_launch(const char *name, unsigned gx, unsigned gy, unsigned gz,
	unsigned bx, unsigned by, unsigned bz, size_t shmem, const uint64_t *args);
void *relabel_emu_alloc(size_t n);
void relabel_emu_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
