//go:build cuda

package gpu

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <cuda.h>

// gorgonia.org/cu calls cuInit in its package init and exits the process when
// it fails, as it does on a machine with the driver library but no GPU. This
// definition of cuInit in the executable takes precedence over libcuda's (the
// linker resolves cu's reference to it), records the driver's real answer and
// reports success, so that the process lives on and Available can say no.
static CUresult relabel_init_result = CUDA_ERROR_NOT_INITIALIZED;

CUresult CUDAAPI cuInit(unsigned int flags) {
	CUresult (*real)(unsigned int) = (CUresult (*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	relabel_init_result = real ? real(flags) : CUDA_ERROR_NOT_INITIALIZED;
	return CUDA_SUCCESS;
}

static int relabel_cuinit_result(void) { return (int)relabel_init_result; }

static const char *relabel_error_name(int r) {
	const char *s = 0;
	if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS || s == 0)
		return "unknown CUresult";
	return s;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/relabel/relabel/gpu/kernels"
)

// minCompute is the oldest architecture the PTX runs on (ptx.sh: -arch=sm_70).
const minCompute = 70

// cuda is the backend on a real device: device 0 of the process (choose
// another with CUDA_VISIBLE_DEVICES), its primary context, and the kernels'
// modules loaded into it.
type cuda struct {
	dev   cu.Device
	ctx   cu.CUContext
	fns   map[string]cu.Function
	about string
}

func open() (backend, error) {
	if r := C.relabel_cuinit_result(); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("gpu: no CUDA device: cuInit: %v", cuError(int(r)))
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("gpu: no CUDA device: cuDeviceGetCount: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("gpu: no CUDA device")
	}
	dev, err := cu.GetDevice(0)
	if err != nil {
		return nil, fmt.Errorf("gpu: cuDeviceGet(0): %w", err)
	}
	name, _ := dev.Name()
	major, err1 := dev.Attribute(cu.ComputeCapabilityMajor)
	minor, err2 := dev.Attribute(cu.ComputeCapabilityMinor)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("gpu: %s: compute capability: %v %v", name, err1, err2)
	}
	if 10*major+minor < minCompute {
		return nil, fmt.Errorf("gpu: %s has compute capability %d.%d; the kernels need %d.%d or later", name, major, minor, minCompute/10, minCompute%10)
	}
	total, _ := dev.TotalMem()
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("gpu: %s: retaining the primary context: %w", name, err)
	}
	c := &cuda{dev: dev, ctx: ctx, fns: map[string]cu.Function{}}
	c.about = fmt.Sprintf("%s (compute %d.%d, %.1f GiB, CUDA driver %d)", name, major, minor, float64(total)/(1<<30), cu.Version())

	release, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	for _, m := range []struct {
		name, ptx string
		fns       []string
	}{
		{"knn.cu", kernels.KNN, []string{"knn_dist", "knn_topk"}},
		{"llc.cu", kernels.LLC, []string{"llc_code"}},
		{"rounds.cu", kernels.Rounds, []string{"rounds_sample", "rounds_em"}},
	} {
		mod, err := cu.LoadData(m.ptx)
		if err != nil {
			// Typically a driver older than the PTX ISA of the toolkit
			// that compiled it (CUDA 11.8: driver 520 or later).
			return nil, fmt.Errorf("gpu: %s: loading the PTX of %s: %w", name, m.name, err)
		}
		for _, f := range m.fns {
			fn, err := mod.Function(f)
			if err != nil {
				return nil, fmt.Errorf("gpu: %s: kernel %s: %w", name, f, err)
			}
			c.fns[f] = fn
		}
	}
	return c, nil
}

// cuError names a CUresult the driver returned to the interposed cuInit.
func cuError(r int) string {
	return fmt.Sprintf("%s (%d)", C.GoString(C.relabel_error_name(C.int(r))), r)
}

func (c *cuda) describe() string { return c.about }

// bind locks the goroutine to its OS thread and makes the primary context
// current there: CUDA contexts are per thread, goroutines are not.
func (c *cuda) bind() (func(), error) {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(c.ctx); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("gpu: cuCtxSetCurrent: %w", err)
	}
	return runtime.UnlockOSThread, nil
}

func (c *cuda) alloc(n int) (dptr, error) {
	p, err := cu.MemAlloc(int64(n))
	return dptr(p), err
}

func (c *cuda) free(p dptr) { _ = cu.MemFree(cu.DevicePtr(p)) }

func (c *cuda) htod(dst dptr, src unsafe.Pointer, n int) error {
	return cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(n))
}

// dtoh waits for the kernels queued before it (legacy default stream).
func (c *cuda) dtoh(dst unsafe.Pointer, src dptr, n int) error {
	return cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(n))
}

func (c *cuda) launch(fn string, grid, block [3]int, shmem int, args []uint64) error {
	f, ok := c.fns[fn]
	if !ok {
		return fmt.Errorf("gpu: no kernel %s", fn)
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return f.Launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, cu.Stream{}, params)
}

func (c *cuda) memInfo() (int64, int64, error) { return cu.MemInfo() }
