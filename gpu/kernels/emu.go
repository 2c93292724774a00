//go:build cudaemu

package kernels

/*
#cgo CXXFLAGS: -std=c++17 -O2 -DRELABEL_EMU
#include <stdlib.h>
#include "emu_api.h"
*/
import "C"

import (
	"embed"
	"fmt"
	"sync"
	"unsafe"
)

// sources ties the emulator's build to the kernel sources it #includes: the
// go command rebuilds a package when an embedded file changes, not when a file
// included by its C++ does.
//
//go:embed *.cu *.cuh
var sources embed.FS

// emuMu serialises launches: the emulator's scheduler state and the kernels'
// static shared arrays are process-wide.
var emuMu sync.Mutex

// EmuAlloc returns n zeroed bytes of emulated device memory (C memory, so that
// emulated kernels may hold on to it across calls).
func EmuAlloc(n int) unsafe.Pointer { return C.relabel_emu_alloc(C.size_t(n)) }

// EmuFree releases memory from EmuAlloc.
func EmuFree(p unsafe.Pointer) { C.relabel_emu_free(p) }

// EmuLaunch runs kernel name on the CPU, with one 8-byte slot per kernel
// parameter in args.
func EmuLaunch(name string, grid, block [3]int, shmem int, args []uint64) error {
	emuMu.Lock()
	defer emuMu.Unlock()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	cargs := (*C.uint64_t)(C.malloc(C.size_t(8 * max(len(args), 1))))
	defer C.free(unsafe.Pointer(cargs))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(cargs)), len(args)), args)
	rc := C.relabel_emu_launch(cname,
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.size_t(shmem), cargs)
	switch rc {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("gpu/kernels: emulator: unknown kernel %q", name)
	default:
		return fmt.Errorf("gpu/kernels: emulator: bad block %v for %s", block, name)
	}
}
