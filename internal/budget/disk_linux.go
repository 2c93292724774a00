package budget

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FreeDisk is the space free to an unprivileged writer on the file system
// that holds path (or its nearest existing parent); 0 when unknown (a
// remote path, or no statfs), in which case nothing is refused.
func FreeDisk(path string) int64 {
	if strings.Contains(path, "://") && !strings.HasPrefix(path, "file://") {
		return 0
	}
	p := filepath.Clean(strings.TrimPrefix(path, "file://"))
	for {
		if _, err := os.Stat(p); err == nil {
			break
		}
		q := filepath.Dir(p)
		if q == p {
			return 0
		}
		p = q
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
