//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"sync"
	"unsafe"
)

// Built reports whether this binary carries a CUDA backend (build tag cuda,
// or cudaemu for the CPU emulator).
const Built = true

// dptr is an address in device memory.
type dptr uintptr

// backend is what the searcher and the coder need of a device: the CUDA
// driver through cu (backend_cu.go) or the CPU emulator (backend_emu.go).
// Methods other than bind, name and describe must run between bind and its
// release, on the goroutine that called bind.
type backend interface {
	// bind makes the device's context current on the calling goroutine's OS
	// thread, which it locks until release.
	bind() (release func(), err error)
	alloc(n int) (dptr, error)
	free(p dptr)
	htod(dst dptr, src unsafe.Pointer, n int) error
	dtoh(dst unsafe.Pointer, src dptr, n int) error
	// launch runs kernel fn; args holds one 8-byte slot per parameter.
	launch(fn string, grid, block [3]int, shmem int, args []uint64) error
	// memInfo is cuMemGetInfo: free and total device memory in bytes.
	memInfo() (free, total int64, err error)
	describe() string
}

// The device is opened once per process, on first use, and shared by every
// Searcher and Coder (and so by every DoFn of a worker).
var (
	openOnce sync.Once
	dev      backend
	devErr   error
)

func device() (backend, error) {
	openOnce.Do(func() { dev, devErr = open() })
	return dev, devErr
}

// Available reports whether the CUDA backend can run here: the binary was
// built with the cuda tag, the driver initialised, a device is present and the
// kernels loaded. It opens the device (once per process) and never exits the
// process, even when the driver reports no device.
func Available() bool {
	_, err := device()
	return err == nil
}

// Err says why Available is false, nil when it is true.
func Err() error {
	_, err := device()
	return err
}

// Device describes the device in use (name, compute capability, memory,
// driver), for logs and summary.json; "" when none is available.
func Device() string {
	d, err := device()
	if err != nil {
		return ""
	}
	return d.describe()
}

// buffer is one device allocation that grows on demand and is reused.
type buffer struct {
	p dptr
	n int
}

// reserve makes b at least n bytes, reallocating (without copying) if needed.
func (b *buffer) reserve(d backend, n int) error {
	if n <= b.n {
		return nil
	}
	b.release(d)
	p, err := d.alloc(n)
	if err != nil {
		return fmt.Errorf("gpu: allocating %d bytes: %w", n, err)
	}
	b.p, b.n = p, n
	return nil
}

func (b *buffer) release(d backend) {
	if b.n > 0 {
		d.free(b.p)
	}
	b.p, b.n = 0, 0
}

// upload copies s into the start of b, growing it as needed.
func upload[T any](d backend, b *buffer, s []T) error {
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if err := b.reserve(d, max(n, 1)); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return d.htod(b.p, unsafe.Pointer(unsafe.SliceData(s)), n)
}

// download copies the start of b into s.
func download[T any](d backend, s []T, b *buffer) error {
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return d.dtoh(unsafe.Pointer(unsafe.SliceData(s)), b.p, n)
}

// args packs kernel arguments into 8-byte slots: device pointers, ints
// (passed as long long) and float64s (double); the kernels take no other types.
func args(vs ...any) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		switch v := v.(type) {
		case dptr:
			out[i] = uint64(v)
		case int:
			out[i] = uint64(int64(v))
		case int64:
			out[i] = uint64(v)
		case float64:
			out[i] = *(*uint64)(unsafe.Pointer(&v))
		default:
			panic(fmt.Sprintf("gpu: kernel argument %d of type %T", i, v))
		}
	}
	return out
}

// budget returns the bytes a call may use: fraction of the free memory.
func budget(d backend, fraction float64) (int64, error) {
	if fraction <= 0 || fraction > 1 {
		fraction = DefaultMemoryFraction
	}
	free, _, err := d.memInfo()
	if err != nil {
		return 0, fmt.Errorf("gpu: cuMemGetInfo: %w", err)
	}
	return int64(float64(free) * fraction), nil
}
