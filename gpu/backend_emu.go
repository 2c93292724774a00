//go:build cudaemu && !cuda

package gpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/relabel/relabel/gpu/kernels"
)

// emuMemory is the emulated device's memory size, for memInfo: small, so
// that the tests exercise the tiling that adapts batches to device memory.
const emuMemory = 64 << 20

// emu runs the kernels' source on the CPU (gpu/kernels/emu.cc). Device memory
// is C memory; a dptr is its address.
type emu struct {
	mu     sync.Mutex
	allocs map[dptr]allocation
	used   int64
}

type allocation struct {
	p unsafe.Pointer
	n int
}

func open() (backend, error) { return &emu{allocs: map[dptr]allocation{}}, nil }

func (e *emu) bind() (func(), error) { return func() {}, nil }

func (e *emu) describe() string { return "CPU emulator of the CUDA kernels (build tag cudaemu)" }

func (e *emu) allocOf(p dptr, n int) unsafe.Pointer {
	e.mu.Lock()
	a, ok := e.allocs[p]
	e.mu.Unlock()
	if !ok || n > a.n {
		panic(fmt.Sprintf("gpu: emulator: %d bytes at %#x outside any allocation", n, uintptr(p)))
	}
	return a.p
}

func (e *emu) alloc(n int) (dptr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.used+int64(n) > emuMemory {
		return 0, fmt.Errorf("gpu: emulator: out of memory (%d + %d bytes)", e.used, n)
	}
	p := kernels.EmuAlloc(n)
	e.allocs[dptr(uintptr(p))] = allocation{p, n}
	e.used += int64(n)
	return dptr(uintptr(p)), nil
}

func (e *emu) free(p dptr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.allocs[p]
	if !ok {
		panic(fmt.Sprintf("gpu: emulator: free of %#x", uintptr(p)))
	}
	delete(e.allocs, p)
	e.used -= int64(a.n)
	kernels.EmuFree(a.p)
}

func (e *emu) htod(dst dptr, src unsafe.Pointer, n int) error {
	copy(unsafe.Slice((*byte)(e.allocOf(dst, n)), n), unsafe.Slice((*byte)(src), n))
	return nil
}

func (e *emu) dtoh(dst unsafe.Pointer, src dptr, n int) error {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(e.allocOf(src, n)), n))
	return nil
}

func (e *emu) launch(fn string, grid, block [3]int, shmem int, args []uint64) error {
	return kernels.EmuLaunch(fn, grid, block, shmem, args)
}

func (e *emu) memInfo() (int64, int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return emuMemory - e.used, emuMemory, nil
}
