//go:build openblas && cgo

package openblas

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
char* openblas_get_config(void);
*/
import "C"

// SetNumThreads sets OpenBLAS's process-wide thread count.
func SetNumThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// Config returns OpenBLAS's build configuration, such as
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64".
func Config() string { return C.GoString(C.openblas_get_config()) }
