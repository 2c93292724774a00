package head

import (
	"slices"
	"syscall"
	"testing"
	"unsafe"
)

// TestDot4KernelsStayInBounds: each of dot4's assembly kernels (and its
// dot4Sums with each set of flags) reads b and out and writes out no
// further than their last column, with both slices ending
// where an inaccessible page starts (a read or write past them faults), at
// every width.
func TestDot4KernelsStayInBounds(t *testing.T) {
	ks := asmKernels()
	if len(ks) == 0 {
		t.Skip("no dot4 assembly on this CPU")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 4*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	for _, g := range []int{1, 3} {
		if err := syscall.Mprotect(mem[g*page:(g+1)*page], syscall.PROT_NONE); err != nil {
			t.Skip("mprotect:", err)
		}
	}
	// tail is the last m float64s of the page before the guard page at g.
	tail := func(g, m int) []float64 {
		return unsafe.Slice((*float64)(unsafe.Pointer(&mem[g*page-8*m])), m)
	}
	const steps = 3
	for _, k := range ks {
		for _, v := range dot4Variants(k) {
			for n := 1; n <= dot4Cols; n++ {
				a := make([]float64, 4*steps)
				for i := range a {
					a[i] = float64(i + 1)
				}
				b := tail(1, (steps-1)*n+n)
				for i := range b {
					b[i] = float64(i%5) - 2
				}
				out := tail(3, 3*n+n)
				for i := range out {
					out[i] = float64(i % 3)
				}
				want := slices.Clone(out)
				dot4Ref(a, 1, steps, b, n, want, n, steps, n, v.flags)
				v.call(a, 1, steps, b, n, out, n, steps, n, v.flags)
				if !slices.Equal(out, want) {
					t.Errorf("%s, n %d:\n got %v\nwant %v", v.name, n, out, want)
				}
			}
		}
	}
}
